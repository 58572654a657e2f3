package engine

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/memrl/memrl/qtable"
	"github.com/memrl/memrl/vfs"
	"github.com/memrl/memrl/wal"
)

func qEntry(m ckptMemory) qtable.Entry {
	return qtable.Entry{Q: m.q, Visits: m.visits, LastReward: m.lastReward, RewardSum: m.rewardSum, Updated: m.updated}
}

// snapshotChunk is how many rows of a collection a checkpoint copies per
// hold of the collection's read lock. Between chunks the lock is released,
// so an add or delete waits for at most one chunk (about 100 µs), not for
// the whole copy.
var snapshotChunk uint32 = 1024 // a variable so that crash tests can make chunks tiny

// Checkpoint writes the state of every collection to the checkpoint files
// and removes the log segments it makes unnecessary, so that recovery
// replays only what came after. Most checkpoints are deltas: they write
// only the memories changed and the ids deleted since the previous one
// (the qtable's dirty marks and each collection's deleted set), to
// CHECKPOINT.<n>. A full one, to CHECKPOINT, starts a new chain when
// there is none, after maxDeltas deltas, when the deltas together hold
// more than half as many memories as the full one, and after any failure
// (a delta after a failed checkpoint could miss changes whose marks that
// checkpoint had taken). Rewards, adds and deletes keep flowing
// while it runs: a collection is copied in chunks of rows, holding its read
// lock for one chunk at a time, and each chunk is encoded and written to
// the new checkpoint file before the next is copied, so no copy of the
// whole table is ever held in memory. Only Drop (and other checkpoints)
// wait for a checkpoint to finish.
//
// The steps, and why they are in this order:
//  1. Take the log's next position L (NextLSN): every record enqueued so
//     far is below L. (The log is not rolled: a roll fsyncs and creates
//     segment files, and every writer would queue behind it. Segments are
//     removed once wholly below some checkpoint's L, and replay can start
//     in the middle of one.)
//  2. Under the database's read lock, list the collections. A create
//     logged before L was applied before its lock was released, so it is
//     listed; one logged after L may be listed too (replay skips a create
//     it already knows). Drops wait for ckptMu, so none happens from here
//     on.
//  3. Copy each collection's state into the new file: every memory
//     (snapshotTo), or for a delta the deleted ids and the memories marked
//     dirty (deltaTo). A change is applied under the same lock it is
//     logged under, and the copy takes those locks (the collection's, and
//     the qtable stripe's for Q), so when the copy reads a memory every
//     change to it logged before L has been applied: each memory's copy
//     reflects at least the log before L, and perhaps some records after
//     it: the copy is fuzzy. A delta reads a memory and clears its mark
//     under the stripe lock, and every change marks it again, so a memory
//     a delta skips was not changed since an earlier file of the chain
//     copied it.
//  4. fsync the log (the part before L must be durable before the
//     checkpoint that replaces it), and the vector (with their checksum
//     file, vectors.sum) and payload files up to
//     the sizes copied: the checkpoint must not point at bytes a crash
//     could take away. The files are written back in paced pieces first
//     (vfs.SyncPaced), so the log's own fsyncs never queue behind them.
//  5. Commit the checkpoint file atomically, with L as its replay position.
//  6. After a full checkpoint, remove the deltas of the previous chain.
//     Remove log segments wholly before L, and the folders of collections
//     that neither the checkpoint nor the live database knows. Everything
//     removed is freed in paced steps (vfs.RemoveFilesPaced,
//     vfs.RemoveAllPaced).
//
// Why a fuzzy copy is enough: records log results, and recovery replays
// every record from L in log order over the copy. For one memory, the
// records after L are its adds, rewards and deletes in the order they were
// applied; the last add (if any) resets it, each reward sets Q and the
// counters to logged values, a delete removes it. So replaying them over
// any state at least as new as L ends in the state of the last record,
// which is the logged state. A memory the copy caught mid-way (say, at its
// old row before a delete and again at a new row after a re-add) is fixed
// the same way: the delete and re-add are both after L.
//
// A failed sync of a vector, payload or checkpoint file stops checkpoints
// for good (ErrCheckpointsStopped): after a failed fsync the kernel may
// have marked unwritten pages clean, so a later fsync that succeeds would
// prove nothing, and a checkpoint trusting it could let the log go. The
// log keeps every record meanwhile and writes go on; restarting the
// process rewrites the files from the log.
func (db *DB) Checkpoint() error { return db.checkpoint(false) }

// CheckpointFull is Checkpoint, but always writes a full checkpoint (and
// starts a new chain): every memory, not only those changed.
func (db *DB) CheckpointFull() error { return db.checkpoint(true) }

func (db *DB) checkpoint(forceFull bool) error {
	// No transaction's group is open while the checkpoint copies and
	// commits: it could hold part of one (group.go).
	db.groups.excl.Lock()
	defer db.groups.excl.Unlock()
	db.ckptMu.Lock()
	defer db.ckptMu.Unlock()
	return db.checkpointLocked(forceFull)
}

// checkpointLocked is checkpoint with db.ckptMu held: it lists the
// collections and takes the log position (listForCheckpointLocked, under
// db.mu), then writes the checkpoint (checkpointListed).
// REQUIRES: db.ckptMu held.
func (db *DB) checkpointLocked(forceFull bool) error {
	db.mu.RLock()
	l, err := db.listForCheckpointLocked()
	db.mu.RUnlock()
	_, err = db.checkpointListed(forceFull, nil, l, err)
	return err
}

// ckptList is what a checkpoint starts from: its log position L, the next
// collection uid, and the collections, in uid order.
type ckptList struct {
	lsn     wal.LSN
	nextUID uint64
	colls   []*Collection
}

// listForCheckpointLocked takes a checkpoint's log position and lists the
// collections. Every create logged before the position is listed: a
// create holds db.mu for writing while it logs and applies its record.
// Drops wait for ckptMu, so none happens until the checkpoint ends.
// REQUIRES: db.ckptMu held; db.mu held for reading.
func (db *DB) listForCheckpointLocked() (ckptList, error) {
	if err := db.log.Err(); err != nil {
		return ckptList{}, err
	}
	if db.closed {
		return ckptList{}, ErrClosed
	}
	l := ckptList{lsn: db.log.NextLSN(), nextUID: db.nextUID, colls: make([]*Collection, 0, len(db.byUID))}
	for _, c := range db.byUID {
		l.colls = append(l.colls, c)
	}
	sort.Slice(l.colls, func(i, j int) bool { return l.colls[i].uid < l.colls[j].uid })
	return l, nil
}

// checkpointListed writes the checkpoint of list l (or fails with lerr, the
// listing's error). held, when not nil, is a collection whose lock the
// caller holds for writing since before l was taken (compaction's swap,
// compact.go): its state is copied without taking the lock, and nothing
// of it is logged between l's position and the copy. It reports whether
// the new checkpoint file was committed or its commit attempted (after
// which a failure leaves the disk holding either file).
// REQUIRES: db.ckptMu held since before l was taken; held.mu, if held is
// set, held for writing.
func (db *DB) checkpointListed(forceFull bool, held *Collection, l ckptList, lerr error) (committed bool, err error) {
	if db.ckptErr != nil {
		return false, db.ckptErr
	}
	start, full := time.Now(), false
	defer func() {
		if !errors.Is(err, ErrClosed) {
			db.publishStatusLocked(start, full, err)
		}
	}()
	if lerr != nil {
		return false, lerr
	}
	lsn, nextUID, colls := l.lsn, l.nextUID, l.colls

	full = forceFull || db.chain.needsFull()
	next := db.chain
	if full {
		next = ckptChain{id: newChainID()}
	} else {
		next.seq++
	}
	// From here on marks are taken: unless this checkpoint commits, the
	// next one must be full.
	db.chain.id = 0
	path := filepath.Join(db.dir, ckptFileName(next.seq))
	af, err := vfs.CreateAtomic(db.fs, path)
	if err != nil {
		return false, err
	}
	defer func() {
		if !committed {
			af.Abort()
		}
	}()
	cw := newCkptWriter(af)
	kind := uint8(ckptDelta)
	if full {
		kind = ckptFull
	}
	cw.header(kind, next.id, next.seq, uint64(lsn), nextUID, len(colls))
	sizes := make([]ckptSizes, len(colls))
	var written int
	for i, c := range colls {
		if c == held {
			cw.beginCollection(c.uid, c.name, c.ckptConfigLocked())
		} else {
			cw.beginCollection(c.uid, c.name, c.ckptConfig())
		}
		var n int
		if c == held {
			sizes[i], n = c.snapshotHeldTo(cw) // compact.go
		} else if full {
			sizes[i], n = c.snapshotTo(cw)
		} else {
			sizes[i], n = c.deltaTo(cw)
		}
		written += n
		cw.endCollection(sizes[i].nrows, sizes[i].paySize, sizes[i].nextID, sizes[i].sections)
	}
	if err := cw.finish(); err != nil {
		return false, fmt.Errorf("engine: write checkpoint: %w", err)
	}

	// The checkpoint replaces the log before L, so that part must be
	// durable before the checkpoint is.
	if err := db.log.Sync(); err != nil {
		return false, err
	}
	// Drop (the only closer of a live collection's files) waits for
	// ckptMu, so these files stay open.
	for i, c := range colls {
		if err := c.vecs.syncTo(sizes[i].nrows); err != nil {
			return false, db.syncFailedLocked(fmt.Errorf("sync vectors of %q: %w", c.name, err))
		}
		if err := c.pays.syncTo(sizes[i].paySize); err != nil {
			return false, db.syncFailedLocked(fmt.Errorf("sync payloads of %q: %w", c.name, err))
		}
	}
	committed = true
	if err := af.Commit(); err != nil {
		return true, db.stopCheckpointsLocked(fmt.Errorf("commit %s: %w", filepath.Base(path), err))
	}
	if full {
		next.baseMems = written
	} else {
		next.deltaMems += written
	}
	db.chain = next
	if full {
		// The deltas of the previous chain are no longer read (their
		// chain id differs); free them.
		if err := db.removeDeltasLocked(); err != nil {
			return true, err
		}
	}
	if err := db.log.RemoveBefore(lsn); err != nil {
		return true, err
	}
	db.releaseImportStatesLocked(lsn) // collection_import.go
	keep := make([]uint64, len(colls))
	for i, c := range colls {
		keep[i] = c.uid
	}
	return true, db.removeOrphansLocked(keep)
}

// syncFailedLocked handles a failed sync of a collection file: a file that
// could not be opened for want of descriptors (ErrTooManyOpenFiles) was
// never fsynced, so nothing is lost and the checkpoint merely fails; any
// other failure stops checkpoints (stopCheckpointsLocked).
// REQUIRES: db.ckptMu held.
func (db *DB) syncFailedLocked(err error) error {
	if errors.Is(err, ErrTooManyOpenFiles) {
		return err
	}
	return db.stopCheckpointsLocked(err)
}

// stopCheckpointsLocked records a failed sync as the sticky checkpoint
// error and returns it. From then on nothing takes the dirty marks or the
// deleted ids, so they grow with every change until the restart the error
// asks for. REQUIRES: db.ckptMu held.
func (db *DB) stopCheckpointsLocked(err error) error {
	db.ckptErr = fmt.Errorf("%w: %w", ErrCheckpointsStopped, err)
	db.opts.Logf("memrl: %v", db.ckptErr)
	return db.ckptErr
}

// ckptSizes are a collection's file sizes and next id as a checkpoint
// copied them: the vector and payload files are synced up to these sizes
// before the checkpoint is committed.
type ckptSizes struct {
	nrows   uint32
	paySize uint64
	nextID  uint64
	// sections are the collection's checkpoint sections, read with the
	// sizes (checkpoint_sections.go).
	sections []ckptSection
}

// snapshotTo copies the collection's checkpointed state onto cw,
// snapshotChunk rows at a time, releasing the read lock between chunks and
// encoding each chunk after releasing it. Memories are visited in row
// order; rows added while the copy runs are visited too, and the file sizes
// and nextID are read with the last chunk, so every row a copied memory
// refers to is below the recorded row count.
//
// A memory deleted and re-added (at a higher row) during the copy can be
// copied twice, at its old and its new row; loadCheckpointLocked keeps the
// later (higher-row) copy, and replay of the delete and the re-add (both
// logged after the checkpoint's position) settles it either way.
func (c *Collection) snapshotTo(cw *ckptWriter) (ckptSizes, int) {
	// Start the collection's next delta afresh: drop the deleted ids and
	// the dirty marks taken so far. Everything they describe happened
	// before the copy below reads it.
	c.mu.Lock()
	c.deleted = make(map[uint64]struct{})
	c.mu.Unlock()
	var discard []qtable.IDEntry
	for i := 0; i < qtable.NumStripes; i++ {
		discard = c.q.TakeDirty(i, discard[:0])
	}
	cw.tombstones(nil)
	chunk := make([]ckptMemory, 0, snapshotChunk)
	pace := newPacer()
	n := 0
	for row := uint32(0); ; {
		pace.step()
		c.mu.RLock()
		end := min(row+snapshotChunk, c.vecs.nrows)
		chunk = c.snapshotRowsLocked(chunk[:0], row, end)
		row = end
		done := row >= c.vecs.nrows
		var sz ckptSizes
		if done {
			sz = ckptSizes{nrows: c.vecs.nrows, paySize: c.pays.size, nextID: c.nextID, sections: c.ckptSectionsLocked()}
		}
		c.mu.RUnlock()
		cw.memories(chunk)
		n += len(chunk)
		if done {
			return sz, n
		}
	}
}

// afterDeltaSwap, when set (by tests only), runs in deltaTo between taking
// the deleted ids and taking the dirty marks, with no lock held.
var afterDeltaSwap func(*Collection)

// deltaTo writes the collection's part of a delta checkpoint onto cw: the
// ids deleted since the previous checkpoint, then the memories marked
// dirty, one qtable stripe at a time, each read together with its memory
// record under the collection's read lock. It returns the sizes, read
// last, and how many memories and tombstones it wrote.
func (c *Collection) deltaTo(cw *ckptWriter) (ckptSizes, int) {
	c.mu.Lock()
	deleted := c.deleted
	c.deleted = make(map[uint64]struct{})
	c.mu.Unlock()
	tombs := make([]uint64, 0, len(deleted))
	for id := range deleted {
		tombs = append(tombs, id)
	}
	if afterDeltaSwap != nil {
		afterDeltaSwap(c)
	}
	slices.Sort(tombs)
	cw.tombstones(tombs)
	n := len(tombs)

	var taken []qtable.IDEntry
	var chunk []ckptMemory
	pace := newPacer()
	for i := 0; i < qtable.NumStripes; i++ {
		pace.step()
		c.mu.RLock()
		taken = c.q.TakeDirty(i, taken[:0])
		chunk = chunk[:0]
		for _, t := range taken {
			// A memory deleted since it was marked is gone from the
			// table too; one deleted between the take and here cannot
			// be, as deletes hold the lock for writing.
			if m, ok := c.mems[t.ID]; ok {
				chunk = append(chunk, ckptMemory{id: t.ID, m: m, q: t.Q, visits: t.Visits,
					lastReward: t.LastReward, rewardSum: t.RewardSum, updated: t.Updated,
					sections: c.memSectionsLocked(t.ID)})
			}
		}
		c.mu.RUnlock()
		cw.memories(chunk)
		n += len(chunk)
	}
	c.mu.RLock()
	sz := ckptSizes{nrows: c.vecs.nrows, paySize: c.pays.size, nextID: c.nextID, sections: c.ckptSectionsLocked()}
	c.mu.RUnlock()
	return sz, n
}

// snapshotRowsLocked appends the live memories of rows [from, to) to dst
// and returns it. A row is live when the memory its row-to-id entry names
// sits at that row (rows of deleted memories, and rows whose add failed
// after the file write, fail that test).
// REQUIRES: c.mu held for reading.
func (c *Collection) snapshotRowsLocked(dst []ckptMemory, from, to uint32) []ckptMemory {
	for r := from; r < to && int(r) < len(c.rowIDs); r++ {
		id := c.rowIDs[r]
		m, ok := c.mems[id]
		if !ok || m.row != r {
			continue
		}
		e, _ := c.q.Get(id)
		dst = append(dst, ckptMemory{id: id, m: m, q: e.Q, visits: e.Visits,
			lastReward: e.LastReward, rewardSum: e.RewardSum, updated: e.Updated,
			sections: c.memSectionsLocked(id)})
	}
	return dst
}

// removeOrphansLocked removes collection folders that neither the
// checkpoint just written (the collections keepUIDs) nor the live database
// refers to: collections dropped before the checkpoint was taken.
// REQUIRES: db.ckptMu held.
func (db *DB) removeOrphansLocked(keepUIDs []uint64) error {
	// List the folders before reading the live collections: a collection
	// created after the listing is not in it, and one created before it is
	// in byUID (drops wait for ckptMu), so no live folder is removed.
	root := filepath.Join(db.dir, "collections")
	names, err := db.fs.List(root)
	if err != nil {
		return err
	}
	keep := make(map[string]bool)
	for _, uid := range keepUIDs {
		keep[filepath.Base(collectionDir(db.dir, uid))] = true
	}
	db.mu.RLock()
	for uid := range db.byUID {
		keep[filepath.Base(collectionDir(db.dir, uid))] = true
	}
	db.mu.RUnlock()
	// Imports under way (collection_import.go): their folders are
	// created before the collection is known; one staged after the
	// listing above is not in names.
	for _, uid := range db.imports.stagingUIDs() {
		keep[filepath.Base(collectionDir(db.dir, uid))] = true
	}
	for _, n := range names {
		if !keep[n] {
			// Paced: a dropped collection's files can be gigabytes.
			if err := vfs.RemoveAllPaced(db.fs, filepath.Join(root, n)); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkpointer runs background checkpoints on time and on log growth.
func (db *DB) checkpointer() {
	defer close(db.done)
	if db.opts.CheckpointInterval < 0 && db.opts.CheckpointBytes < 0 {
		<-db.stop
		return
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	last := time.Now()
	lastBytes := db.log.Stats().Bytes
	for {
		select {
		case <-db.stop:
			return
		case now := <-tick.C:
			bytes := db.log.Stats().Bytes
			due := db.opts.CheckpointInterval > 0 && now.Sub(last) >= db.opts.CheckpointInterval
			due = due || db.opts.CheckpointBytes > 0 && int64(bytes-lastBytes) >= db.opts.CheckpointBytes
			if !due {
				continue
			}
			if err := db.Checkpoint(); err != nil {
				db.opts.Logf("memrl: background checkpoint: %v", err)
			}
			last, lastBytes = time.Now(), db.log.Stats().Bytes
		}
	}
}
