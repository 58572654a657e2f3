package engine

import (
	"bytes"
	"fmt"
	"path/filepath"

	"github.com/cespare/xxhash/v2"

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
// wrote, and synced, before logging the marker:
//
//	recRemap  uid u64 | gen u64 | nrows u32 | paySize u64 | mapSum u64
//
// gen's files hold nrows rows and paySize payload bytes at the marker, and
// its row map is the file remap.<gen>.map, whose xxhash64 is mapSum:
//
//	magic "MRLREMAP" | version u8 = 1 | gen u64 | nkept u32 | npinned u32 |
//	nkept × (id u64 | oldRow u32 | oldOff u64 | newOff u64) |
//	npinned × (id u64 | row u32 | off u64) | xxhash64 of all before u64
//
// The kept entry i is new row i: it holds memory id if that memory is, at
// the marker, at oldRow with its payload at oldOff (then moved to row i and
// newOff), and is dead otherwise. A pinned entry moves a snapshot's ghost.
// The map file is removed with its generation; a damaged one, with its
// marker in the log, is corruption (ErrCorrupt): recovery refuses it.
const recRemap byte = 22

// remapMagic opens a row map file; remapVersion is its layout.
const (
	remapMagic   = "MRLREMAP"
	remapVersion = 1
	remapBase    = "remap"
	remapExt     = ".map"
)

type remapRec struct {
	uid, gen uint64
	nrows    uint32
	paySize  uint64
	mapSum   uint64
}

func encodeRemap(r remapRec) []byte {
	b := make([]byte, 0, 37)
	b = append(b, recRemap)
	b = le.AppendUint64(b, r.uid)
	b = le.AppendUint64(b, r.gen)
	b = le.AppendUint32(b, r.nrows)
	b = le.AppendUint64(b, r.paySize)
	return le.AppendUint64(b, r.mapSum)
}

func decodeRemap(rec []byte) (remapRec, error) {
	if len(rec) != 37 || rec[0] != recRemap {
		return remapRec{}, fmt.Errorf("%w: remap: %d bytes, want 37", errBadRecord, len(rec))
	}
	return remapRec{uid: le.Uint64(rec[1:]), gen: le.Uint64(rec[9:]), nrows: le.Uint32(rec[17:]),
		paySize: le.Uint64(rec[21:]), mapSum: le.Uint64(rec[29:])}, nil
}

// remapMap is the content of a row map file.
type remapMap struct {
	gen    uint64
	kept   []keptRow // by new row; payLen unused
	pinned map[uint64]pinMove
}

const (
	remapHeaderLen = len(remapMagic) + 1 + 8 + 4 + 4
	remapKeptLen   = 8 + 4 + 8 + 8
	remapPinnedLen = 8 + 4 + 8
)

func encodeRemapMap(m remapMap) []byte {
	b := make([]byte, 0, remapHeaderLen+remapKeptLen*len(m.kept)+remapPinnedLen*len(m.pinned)+8)
	b = append(b, remapMagic...)
	b = append(b, remapVersion)
	b = le.AppendUint64(b, m.gen)
	b = le.AppendUint32(b, uint32(len(m.kept)))
	b = le.AppendUint32(b, uint32(len(m.pinned)))
	for _, k := range m.kept {
		b = le.AppendUint64(b, k.id)
		b = le.AppendUint32(b, k.old)
		b = le.AppendUint64(b, k.oldOff)
		b = le.AppendUint64(b, k.newOff)
	}
	for id, p := range m.pinned {
		b = le.AppendUint64(b, id)
		b = le.AppendUint32(b, p.row)
		b = le.AppendUint64(b, p.off)
	}
	return le.AppendUint64(b, xxhash.Sum64(b))
}

// decodeRemapMap decodes and verifies a row map file of generation gen
// whose xxhash64 (trailer included) the marker recorded as sum. Any
// mismatch wraps ErrCorrupt.
func decodeRemapMap(b []byte, gen, sum uint64) (remapMap, error) {
	bad := func(why string) (remapMap, error) {
		return remapMap{}, fmt.Errorf("%w: row map of generation %d: %s", ErrCorrupt, gen, why)
	}
	if len(b) < remapHeaderLen+8 || !bytes.Equal(b[:len(remapMagic)], []byte(remapMagic)) {
		return bad("no header")
	}
	if xxhash.Sum64(b) != sum {
		return bad("checksum differs from the marker's")
	}
	body := b[:len(b)-8]
	if xxhash.Sum64(body) != le.Uint64(b[len(b)-8:]) {
		return bad("checksum mismatch")
	}
	if v := body[len(remapMagic)]; v != remapVersion {
		return bad(fmt.Sprintf("version %d", v))
	}
	p := len(remapMagic) + 1
	if g := le.Uint64(body[p:]); g != gen {
		return bad(fmt.Sprintf("names generation %d", g))
	}
	nk, np := uint64(le.Uint32(body[p+8:])), uint64(le.Uint32(body[p+12:]))
	if uint64(len(body)) != uint64(remapHeaderLen)+nk*remapKeptLen+np*remapPinnedLen {
		return bad("length does not match its counts")
	}
	m := remapMap{gen: gen, kept: make([]keptRow, nk), pinned: make(map[uint64]pinMove, np)}
	p = remapHeaderLen
	for i := range m.kept {
		m.kept[i] = keptRow{id: le.Uint64(body[p:]), old: le.Uint32(body[p+8:]), oldOff: le.Uint64(body[p+12:]), newOff: le.Uint64(body[p+20:])}
		p += remapKeptLen
	}
	for range np {
		m.pinned[le.Uint64(body[p:])] = pinMove{row: le.Uint32(body[p+8:]), off: le.Uint64(body[p+12:])}
		p += remapPinnedLen
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
	b := encodeRemapMap(remapMap{gen: ng.gen, kept: ng.kept, pinned: pinTo})
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
	if uint64(len(m.kept)) != uint64(r.nrows) {
		return fmt.Errorf("%w: collection %q: row map of %d rows, marker %d", ErrCorrupt, c.name, len(m.kept), r.nrows)
	}
	mems := make(map[uint64]memory, len(c.mems))
	rowIDs := make([]uint64, len(m.kept))
	for i, k := range m.kept {
		rowIDs[i] = k.id
		if mm, ok := c.mems[k.id]; ok && mm.row == k.old && mm.payOff == k.oldOff {
			mm.row, mm.payOff = uint32(i), k.newOff
			mems[k.id] = mm
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
		if to, ok := m.pinned[id]; ok {
			gm.row, gm.payOff = to.row, to.off
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
