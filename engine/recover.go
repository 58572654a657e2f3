package engine

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/memrl/memrl/wal"
)

// recover loads the checkpoint, opens the log and replays it.
//
// The members of an atomic group (a transaction, group.go) are applied
// only if the group's commit record is in the log; a group cut short by a
// crash is dropped whole, reported in Recovery.GroupsDropped, and an abort
// record is logged for it.
//
// Replay starts at the checkpoint's WAL position. The checkpoint is fuzzy
// (taken while rewards keep flowing), so records at or after that position
// may already be reflected in it; every record logs a result rather than an
// operation, and replaying the log suffix in order converges to the state
// the log describes whatever the starting point. That is also why replay is
// lenient about rewards and deletes of memories it does not know: they were
// deleted later, and the checkpoint already saw it.
func (db *DB) recover() error {
	cp, chain, err := db.readCheckpointChain()
	if err != nil {
		return err
	}
	db.chain = chain
	db.Recovery.DeltasApplied = int(chain.seq)
	db.nextUID = max(cp.nextUID, 1)
	db.Recovery.CheckpointLSN = cp.walLSN
	for _, cc := range cp.colls {
		gen, err := collGen(cc) // compact_files.go
		if err != nil {
			return err
		}
		c, err := openCollectionGen(db, cc.name, cc.uid, cc.cfg, gen, cc.nrows, cc.paySize, false)
		if err != nil {
			return fmt.Errorf("engine: open collection %q: %w", cc.name, err)
		}
		c.loadCheckpointLocked(cc)
		if err := c.loadSectionsLocked(cc); err != nil {
			c.closeFiles()
			return err
		}
		db.addCollectionLocked(c)
	}

	// From: the log must reach back to the checkpoint (loggap.go).
	l, report, err := wal.Open(wal.Options{
		FS: db.fs, Dir: filepath.Join(db.dir, "wal"), Sync: db.opts.Sync,
		SyncInterval: db.opts.SyncInterval, SegmentSize: db.opts.SegmentSize,
		From: wal.LSN(cp.walLSN), AcceptGap: db.acceptLogGap,
	})
	if errors.Is(err, wal.ErrGap) {
		return wrapLogGap(err)
	}
	if err != nil {
		return err
	}
	db.log = l
	from := wal.LSN(cp.walLSN)
	if report.Gap != nil {
		from = max(from, report.FirstLSN) // records below the log's first are gone
	}
	if t := report.Torn; t != nil {
		db.Recovery.TornTail = fmt.Sprintf("%s: cut at offset %d, %d bytes dropped (%s)", t.File, t.Offset, t.Dropped, t.Reason)
		db.opts.Logf("memrl: recovery: torn log tail cut off: %s", db.Recovery.TornTail)
	}
	// Transactions' records are applied all or none (group_replay.go).
	gr := newGroupReplay(func(lsn uint64, rec []byte) error {
		db.Recovery.RecordsReplayed++
		if err := db.replayRecord(lsn, rec); err != nil {
			return fmt.Errorf("engine: replay record %d: %w", lsn, err)
		}
		return nil
	})
	gr.gapped = report.Gap != nil
	err = l.Replay(from, func(lsn wal.LSN, rec []byte) error {
		if err := gr.record(uint64(lsn), rec); err != nil {
			return fmt.Errorf("engine: replay record %d: %w", lsn, err)
		}
		return nil
	})
	if err == nil {
		err = gr.finish()
	}
	if err != nil {
		return err
	}
	if g := report.Gap; g != nil {
		db.afterLogGapLocked(g, report.NextLSN) // loggap.go
	}
	db.startGroupSeq(gr.maxID)
	ckptUIDs := make(map[uint64]bool, len(cp.colls))
	for _, cc := range cp.colls {
		ckptUIDs[cc.uid] = true
	}
	if err := db.removeImportLeftovers(ckptUIDs); err != nil { // collection_import.go
		return err
	}
	if err := db.abortGroups(gr); err != nil {
		return err
	}
	remapped := false
	for _, c := range db.byUID {
		if c.cs.remapped {
			// The disk's checkpoint names the generation before the
			// marker: its files stay until a checkpoint names this one
			// (below), or a second crash could not replay to it.
			remapped = true
		} else {
			if err := c.removeStaleGensLocked(); err != nil { // compact_files.go
				return err
			}
			// A row map of the checkpoint's own generation is left by
			// a crash after that checkpoint: its marker precedes it.
			if err := c.removeRemapMap(c.gen); err != nil {
				return err
			}
		}
		c.finishSnapshotsLocked() // snapshot.go
		c.rebuildDeadLocked()
		c.rebuildDerivedLocked()
		c.rebuildFilterIndexLocked() // filter_index.go
		if err := c.openChecksLocked(); err != nil {
			return err
		}
		c.openIndexLocked()
	}
	if g := report.Gap; g != nil && !db.restoredStart(g) {
		// The accepted state becomes the checkpoint's: the skipped ids,
		// and a log that reaches back to it, so that the next Open needs
		// no option (loggap.go).
		if err := db.CheckpointFull(); err != nil {
			return fmt.Errorf("engine: checkpoint after the accepted log gap: %w", err)
		}
	}
	if remapped {
		return db.checkpointRemappedLocked()
	}
	return nil
}

// checkpointRemappedLocked commits a checkpoint naming the generations
// that replayed remap markers switched collections to (a compaction whose
// own checkpoint did not commit), then removes the files of the others. If
// the checkpoint fails, the files stay (a later open tries again) and Open
// goes on: the log still holds the markers.
// REQUIRES: no concurrent use of db (Open has not returned yet).
func (db *DB) checkpointRemappedLocked() error {
	if err := db.CheckpointFull(); err != nil {
		db.opts.Logf("memrl: recovery: the checkpoint after a compaction's remap marker failed; its old files stay: %v", err)
		return nil
	}
	for _, c := range db.byUID {
		if !c.cs.remapped {
			continue
		}
		c.cs.remapped = false
		if err := c.removeStaleGensLocked(); err != nil {
			return err
		}
		if err := c.removeRemapMap(c.gen); err != nil {
			return err
		}
	}
	return nil
}

// replayRecord applies one logged change, the record at lsn. REQUIRES: no concurrent use of db
// (Open has not returned yet).
func (db *DB) replayRecord(lsn uint64, rec []byte) error {
	if len(rec) == 0 {
		return fmt.Errorf("%w: empty", errBadRecord)
	}
	switch rec[0] {
	case recCreate, recCreateIndexed:
		r, err := decodeCreate(rec)
		if err != nil {
			return err
		}
		if _, ok := db.byUID[r.uid]; ok {
			return nil
		}
		c, err := openCollection(db, r.name, r.uid, r.cfg, 0, 0, false)
		if err != nil {
			return err
		}
		db.addCollectionLocked(c)
	case recDrop:
		uid, err := decodeDrop(rec)
		if err != nil {
			return err
		}
		if c, ok := db.byUID[uid]; ok {
			db.dropLocked(c)
			c.closeFiles()
		}
	case recAdd, recAddExt:
		uid, err := addRecUID(rec)
		if err != nil {
			return err
		}
		c, ok := db.byUID[uid]
		if !ok {
			return fmt.Errorf("add to unknown collection %d", uid)
		}
		r, err := decodeAdd(rec, c.cfg.Dim)
		if err != nil {
			return err
		}
		if err := c.writeFilesLocked(r); err != nil {
			return err
		}
		c.applyAddLocked(r)
	case recDelete:
		r, err := decodeDelete(rec)
		if err != nil {
			return err
		}
		if c, ok := db.byUID[r.uid]; ok {
			c.applyDeleteLocked(r)
		}
	case recQ:
		r, err := decodeQ(rec)
		if err != nil {
			return err
		}
		if c, ok := db.byUID[r.uid]; ok {
			if e, ok := c.q.Get(r.id); ok {
				applyQ(&e, r)
				c.q.Put(r.id, e)
				c.recordHistory(lsn, r) // history.go
			}
		}
	case recSetAttrs:
		r, err := decodeSetAttrs(rec)
		if err != nil {
			return err
		}
		if c, ok := db.byUID[r.uid]; ok {
			c.applySetAttrsLocked(r)
		}
	case recSetPayload:
		r, err := decodeSetPayload(rec)
		if err != nil {
			return err
		}
		c, ok := db.byUID[r.uid]
		if !ok {
			return fmt.Errorf("payload update in unknown collection %d", r.uid)
		}
		// Written even when the memory was deleted later, as an add's
		// files are: the file then holds every byte the log placed.
		if err := c.pays.put(r.id, r.payOff, r.payload); err != nil {
			return err
		}
		c.applySetPayloadLocked(r)
	case recIndexed:
		r, err := decodeIndexed(rec)
		if err != nil {
			return err
		}
		if c, ok := db.byUID[r.uid]; ok {
			c.applyIndexedLocked(r)
		}
	case recExpire:
		r, err := decodeExpire(rec)
		if err != nil {
			return err
		}
		if c, ok := db.byUID[r.uid]; ok {
			c.applyExpireLocked(r)
		}
	case recPrunePolicy: // prune_policy_codec.go
		r, err := decodePolicyRec(rec)
		if err != nil {
			return err
		}
		if c, ok := db.byUID[r.uid]; ok {
			c.applyPolicyLocked(r)
		}
	case recRemap: // remap.go
		r, err := decodeRemap(rec)
		if err != nil {
			return err
		}
		if c, ok := db.byUID[r.uid]; ok {
			return c.replayRemapLocked(r)
		}
	case recReplace: // replace.go
		return db.replayReplace(rec)
	case recSnapshot, recDelSnapshot, recRollbackBatch, recRollback:
		return db.replaySnapshotRecord(rec) // snapshot_replay.go
	case recImport: // collection_import.go
		return db.replayImportLocked(lsn, rec)
	default:
		return fmt.Errorf("%w: unknown type %d", errBadRecord, rec[0])
	}
	return nil
}

// loadCheckpointLocked fills a freshly opened collection from its
// checkpointed state. REQUIRES: c not yet shared.
func (c *Collection) loadCheckpointLocked(cc ckptCollection) {
	c.nextID = max(cc.nextID, 1)
	c.rowIDs = make([]uint64, cc.nrows)
	for _, m := range cc.mems {
		// A fuzzy copy may hold a memory twice (see snapshot); keep the
		// copy at the higher row, the later one. Replay settles it anyway.
		if old, ok := c.mems[m.id]; ok && old.row > m.m.row {
			continue
		}
		c.mems[m.id] = m.m
		c.liveIDs.add(m.id)
		c.rowIDs[m.m.row] = m.id
		c.q.Load(m.id, qEntry(m)) // clean: the checkpoint holds it
	}
}

// rebuildDeadLocked marks every row of the vector file that no live memory
// holds: deleted memories, and rows whose add never reached the log.
func (c *Collection) rebuildDeadLocked() {
	c.dead.Clear()
	for uint32(len(c.rowIDs)) < c.vecs.nrows {
		c.rowIDs = append(c.rowIDs, 0)
	}
	live := make([]bool, c.vecs.nrows)
	for _, m := range c.mems {
		live[m.row] = true
	}
	for r, ok := range live {
		if !ok {
			c.dead.Add(uint32(r))
		}
	}
}

// abortGroups logs, and waits for, an abort record for each group replay
// dropped, so that later recoveries need not hold the log back behind
// their members (group_replay.go).
func (db *DB) abortGroups(gr *groupReplay) error {
	if len(gr.dropped) == 0 {
		return nil
	}
	db.Recovery.GroupsDropped = len(gr.dropped)
	db.Recovery.GroupRecordsDropped = gr.droppedRecs
	db.opts.Logf("memrl: recovery: %d transaction(s) cut short by a crash dropped whole (%d log records)",
		len(gr.dropped), gr.droppedRecs)
	var last wal.LSN
	for _, gid := range gr.dropped {
		lsn, err := db.log.Enqueue(encodeGroupAbort(gid))
		if err != nil {
			return err
		}
		last = lsn
	}
	return db.log.WaitDurable(last)
}
