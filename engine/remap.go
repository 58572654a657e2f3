package engine

import (
	"fmt"
	"path/filepath"

	"github.com/cespare/xxhash/v2"

	"github.com/memrl/memrl/engine/record"
	"github.com/memrl/memrl/engine/remapfile"
	"github.com/memrl/memrl/vfs"
)

// The remap marker: how a compaction's new row numbering reaches the log
// (compact.go; engine/doc.go, "Compaction", step 4).
//
// A compaction logs, under the collection's write lock as it swaps the new
// generation in, a recRemap record; records of the collection logged after
// it refer to the new generation's rows and payload offsets, those before
// it to the old one's. Its writers go on at once, and the full checkpoint
// naming the new generation follows at leisure. Recovery that meets the
// marker after its checkpoint switches the collection to the new
// generation there (replayRemapLocked), with the row map the compaction
// wrote, and synced, before logging the marker. The marker's body is
// package record's (record.Remap), the row map file's format package
// remapfile's; this file keeps the engine's names for them and the
// orchestration: writing the map, replaying the marker, removing the map.
// The map file is removed with its generation; a damaged one, with its
// marker in the log, is corruption (ErrCorrupt): recovery refuses it.
const recRemap = record.TypeRemap

// remapBase and remapExt name a row map file (genName).
const (
	remapBase = remapfile.Base
	remapExt  = remapfile.Ext
)

type remapRec struct {
	uid, gen uint64
	nrows    uint32
	paySize  uint64
	mapSum   uint64
}

func encodeRemap(r remapRec) []byte {
	return record.EncodeRemap(record.Remap{UID: r.uid, Gen: r.gen, NRows: r.nrows, PaySize: r.paySize, MapSum: r.mapSum})
}

func decodeRemap(rec []byte) (remapRec, error) {
	r, err := record.DecodeRemap(rec)
	return remapRec{uid: r.UID, gen: r.Gen, nrows: r.NRows, paySize: r.PaySize, mapSum: r.MapSum}, err
}

// encodeRemapMap returns generation gen's row map file: kept by new row,
// and the ghosts' moves. The rows are handed to the encoder as they are,
// without a copy.
func encodeRemapMap(gen uint64, kept []keptRow, pinned map[uint64]pinMove) []byte {
	keptSeq := func(yield func(remapfile.Kept) bool) {
		for _, k := range kept {
			if !yield(remapfile.Kept{ID: k.id, OldRow: k.old, OldOff: k.oldOff, NewOff: k.newOff}) {
				return
			}
		}
	}
	pinSeq := func(yield func(uint64, remapfile.Pin) bool) {
		for id, p := range pinned {
			if !yield(id, remapfile.Pin{Row: p.row, Off: p.off}) {
				return
			}
		}
	}
	return remapfile.Encode(gen, len(kept), keptSeq, len(pinned), pinSeq)
}

// decodeRemapMap decodes and verifies a row map file of generation gen
// whose xxhash64 (trailer included) the marker recorded as sum. Any
// mismatch wraps ErrCorrupt.
func decodeRemapMap(b []byte, gen, sum uint64) (remapfile.Map, error) {
	m, err := remapfile.Decode(b, gen, sum)
	if err != nil {
		return m, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return m, nil
}

// remapPath is the row map file of generation gen in dir.
func remapPath(dir string, gen uint64) string {
	return filepath.Join(dir, genName(remapBase, remapExt, gen))
}

// writeRemapMap writes generation ng's row map durably (WriteFileAtomic:
// synced, and its name too) and returns its checksum for the marker.
func (ng *nextGen) writeRemapMap(pinTo map[uint64]pinMove) (uint64, error) {
	b := encodeRemapMap(ng.gen, ng.kept, pinTo)
	if err := vfs.WriteFileAtomic(ng.c.db.fs, remapPath(ng.c.dir, ng.gen), b); err != nil {
		return 0, fdError(err)
	}
	return xxhash.Sum64(b), nil
}

// replayRemapLocked switches c, at a remap marker met by replay, to the
// generation the marker names: the state replayed so far is the state
// the compaction's swap saw (its writers were kept out while it built the
// map, and the marker was logged under the write lock as it swapped), so
// this does what the swap did, with the map the compaction wrote.
// REQUIRES: c not yet shared (recovery).
func (c *Collection) replayRemapLocked(r remapRec) error {
	if r.gen <= c.gen {
		return nil // the checkpoint already names it, or a later one
	}
	if r.gen != c.gen+1 {
		return fmt.Errorf("%w: collection %q: remap marker to generation %d, at generation %d", ErrCorrupt, c.name, r.gen, c.gen)
	}
	if n := c.snap.replay.len(); n != 0 {
		return fmt.Errorf("%w: collection %q: remap marker inside a rollback (%d changes pending)", errBadRecord, c.name, n)
	}
	b, err := vfs.ReadFile(c.db.fs, remapPath(c.dir, r.gen))
	if err != nil {
		return fmt.Errorf("engine: collection %q: row map of generation %d: %w", c.name, r.gen, err)
	}
	m, err := decodeRemapMap(b, r.gen, r.mapSum)
	if err != nil {
		return fmt.Errorf("engine: collection %q: %w", c.name, err)
	}
	if uint64(len(m.Kept)) != uint64(r.nrows) {
		return fmt.Errorf("%w: collection %q: row map of %d rows, marker %d", ErrCorrupt, c.name, len(m.Kept), r.nrows)
	}
	mems := make(map[uint64]memory, len(c.mems))
	rowIDs := make([]uint64, len(m.Kept))
	for i, k := range m.Kept {
		rowIDs[i] = k.ID
		if mm, ok := c.mems[k.ID]; ok && mm.row == k.OldRow && mm.payOff == k.OldOff {
			mm.row, mm.payOff = uint32(i), k.NewOff
			mems[k.ID] = mm
		}
	}
	if len(mems) != len(c.mems) {
		return fmt.Errorf("%w: collection %q: row map of generation %d holds %d of the %d live memories", ErrCorrupt, c.name, r.gen, len(mems), len(c.mems))
	}
	vecs, err := openVectorStoreGen(c.db.files, c.dir, r.gen, c.cfg.Dim, r.nrows, false, c.db.opts.MapFiles)
	if err != nil {
		return fmt.Errorf("engine: collection %q: files of generation %d: %w", c.name, r.gen, err)
	}
	pays, err := openPayloadStore(c.db.files, filepath.Join(c.dir, genName(payBase, payExt, r.gen)), r.paySize, vecs.hdr.LegacyPayloadEnd)
	if err != nil {
		vecs.close()
		return fmt.Errorf("engine: collection %q: files of generation %d: %w", c.name, r.gen, err)
	}
	c.forEachPinnedLocked(func(id uint64, gm *memory) {
		if to, ok := m.Pinned[id]; ok {
			gm.row, gm.payOff = to.Row, to.Off
		}
	})
	if err := c.closeFiles(); err != nil {
		c.db.opts.Logf("memrl: collection %q: closing the files of generation %d: %v", c.name, c.gen, err)
	}
	c.vecs, c.pays, c.rowIDs, c.mems, c.gen = vecs, pays, rowIDs, mems, r.gen
	c.dead.Clear() // of the old rows; rebuilt once replay ends (rebuildDeadLocked)
	c.cs.remapped = true
	return nil
}

// removeRemapMap removes generation gen's row map once a checkpoint names
// gen (no recovery replays its marker any more), and syncs the folder.
func (c *Collection) removeRemapMap(gen uint64) error {
	if err := vfs.RemoveFilesPaced(c.db.fs, c.dir, []string{remapPath(c.dir, gen)}); err != nil {
		return fdError(err)
	}
	return nil
}
