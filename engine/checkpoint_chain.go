package engine

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/memrl/memrl/vfs"
)

// maxDeltas is how many delta checkpoints may follow a full one.
// Recovery reads the full checkpoint and every delta, so the chain is kept
// short; a delta is cheap (only changed memories), a full checkpoint
// writes every memory.
const maxDeltas = 16

// ckptChain describes the checkpoint files on disk: a full checkpoint and
// the deltas written after it.
type ckptChain struct {
	id        uint64 // chain id of the full checkpoint; 0 when there is none usable for deltas
	seq       uint32 // deltas written after it
	baseMems  int    // memories in the full checkpoint
	deltaMems int    // memories and tombstones in its deltas
}

// CheckpointStatus describes the checkpoints for monitoring. It is
// published when a checkpoint ends, so reading it never waits for one that
// is running.
type CheckpointStatus struct {
	Last     time.Time     // when the last successful checkpoint committed; zero if none since Open
	LastFull bool          // whether it was a full checkpoint
	Took     time.Duration // how long it took
	Deltas   int           // deltas written after the current full checkpoint
	Failures int           // failed checkpoints since Open
	Stopped  error         // the ErrCheckpointsStopped error, if checkpoints stopped
}

// CheckpointStatus returns the status published by the last checkpoint.
func (db *DB) CheckpointStatus() CheckpointStatus {
	if p := db.ckptStatus.Load(); p != nil {
		return *p
	}
	return CheckpointStatus{}
}

// publishStatusLocked publishes the outcome of a checkpoint that started
// at start. REQUIRES: db.ckptMu held.
func (db *DB) publishStatusLocked(start time.Time, full bool, err error) {
	st := db.CheckpointStatus()
	if err == nil {
		st.Last, st.LastFull, st.Took = time.Now(), full, time.Since(start)
	} else {
		st.Failures++
	}
	st.Deltas = int(db.chain.seq)
	st.Stopped = db.ckptErr
	db.ckptStatus.Store(&st)
}

// needsFull reports whether the next checkpoint must be a full one.
func (c ckptChain) needsFull() bool {
	return c.id == 0 || c.seq >= maxDeltas || c.deltaMems > c.baseMems/2
}

// newChainID returns a random non-zero chain id: a delta is applied only
// over the full checkpoint that carries its chain id, so a delta left from
// an older chain (a crash before it was removed) is never applied.
func newChainID() uint64 { return rand.Uint64() | 1 }

// ckptFileName names the full checkpoint (seq 0) and delta seq.
func ckptFileName(seq uint32) string {
	if seq == 0 {
		return ckptName
	}
	return ckptName + "." + strconv.FormatUint(uint64(seq), 10)
}

// removeDeltasLocked frees every delta file (CHECKPOINT.<n>): called after
// a full checkpoint committed, when none of them is read any more.
// REQUIRES: db.ckptMu held.
func (db *DB) removeDeltasLocked() error {
	names, err := db.fs.List(db.dir)
	if err != nil {
		return err
	}
	var paths []string
	for _, n := range names {
		rest, ok := strings.CutPrefix(n, ckptName+".")
		if _, err := strconv.ParseUint(rest, 10, 32); ok && err == nil {
			paths = append(paths, filepath.Join(db.dir, n))
		}
	}
	return vfs.RemoveFilesPaced(db.fs, db.dir, paths)
}

// readCheckpointChain reads the full checkpoint and the deltas of its
// chain, merged into one checkpoint, and describes the chain. A missing
// CHECKPOINT is an empty database. Deltas are read from CHECKPOINT.1 on
// until one is missing or belongs to another chain (left by a crash after
// a newer full checkpoint); a delta that cannot be decoded is corruption,
// even one that may be such a leftover: a damaged header cannot be trusted
// to say which chain it belongs to, and skipping a delta of this chain
// would lose changes whose log is gone.
func (db *DB) readCheckpointChain() (checkpoint, ckptChain, error) {
	var cp checkpoint
	var chain ckptChain
	read := func(seq uint32) ([]byte, error) {
		return vfs.ReadFile(db.fs, filepath.Join(db.dir, ckptFileName(seq)))
	}
	data, err := read(0)
	if errors.Is(err, os.ErrNotExist) {
		return cp, chain, nil
	}
	if err != nil {
		return cp, chain, err
	}
	if cp, err = decodeCheckpoint(data); err != nil {
		return cp, chain, fmt.Errorf("%w (file %s)", err, filepath.Join(db.dir, ckptName))
	}
	if cp.kind != ckptFull {
		return cp, chain, fmt.Errorf("%w: %s is not a full checkpoint", ErrCorruptCheckpoint, filepath.Join(db.dir, ckptName))
	}
	if cp.chainID == 0 {
		return cp, chain, nil // an older version's: no deltas; the next checkpoint is full
	}
	chain = ckptChain{id: cp.chainID}
	for _, c := range cp.colls {
		chain.baseMems += len(c.mems)
	}
	var m *ckptMerger
	for seq := uint32(1); ; seq++ {
		data, err := read(seq)
		if errors.Is(err, os.ErrNotExist) {
			break
		}
		if err != nil {
			return cp, chain, err
		}
		d, err := decodeCheckpoint(data)
		if err != nil {
			return cp, chain, fmt.Errorf("%w (file %s)", err, filepath.Join(db.dir, ckptFileName(seq)))
		}
		if d.kind != ckptDelta || d.chainID != chain.id || d.seq != seq {
			break // from an older chain
		}
		if m == nil {
			m = newCkptMerger(cp)
		}
		m.apply(d)
		chain.seq = seq
		for _, c := range d.colls {
			chain.deltaMems += len(c.mems) + len(c.tombs)
		}
	}
	if m != nil {
		cp = m.result()
		if err := cp.checkBounds(); err != nil {
			return cp, chain, err
		}
	}
	return cp, chain, nil
}

// ckptMerger applies deltas to a full checkpoint.
type ckptMerger struct {
	cp    checkpoint
	colls map[uint64]*mergeColl
}

type mergeColl struct {
	cc  ckptCollection
	pos map[uint64]int // id -> index in cc.mems
}

func newCkptMerger(base checkpoint) *ckptMerger {
	m := &ckptMerger{cp: base, colls: make(map[uint64]*mergeColl)}
	for _, c := range base.colls {
		m.colls[c.uid] = newMergeColl(c)
	}
	return m
}

// newMergeColl indexes c's memories by id. A fuzzy full checkpoint may hold
// a memory twice (see snapshotTo); the copy at the higher row is kept.
func newMergeColl(c ckptCollection) *mergeColl {
	mc := &mergeColl{cc: c, pos: make(map[uint64]int, len(c.mems))}
	mems := c.mems
	// Sized for them all: grown by appends, a million memories were
	// copied thirty-odd times (1.1 s of a 5.9 s Open at 1M).
	mc.cc.mems = make([]ckptMemory, 0, len(mems))
	for _, mem := range mems {
		mc.upsert(mem, true)
	}
	return mc
}

// upsert inserts mem or replaces the memory with its id (only with one at
// a lower row, when keepHigherRow).
func (mc *mergeColl) upsert(mem ckptMemory, keepHigherRow bool) {
	if i, ok := mc.pos[mem.id]; ok {
		if !keepHigherRow || mc.cc.mems[i].m.row < mem.m.row {
			mc.cc.mems[i] = mem
		}
		return
	}
	mc.pos[mem.id] = len(mc.cc.mems)
	mc.cc.mems = append(mc.cc.mems, mem)
}

func (mc *mergeColl) remove(id uint64) {
	i, ok := mc.pos[id]
	if !ok {
		return
	}
	last := len(mc.cc.mems) - 1
	if i != last {
		mc.cc.mems[i] = mc.cc.mems[last]
		mc.pos[mc.cc.mems[i].id] = i
	}
	mc.cc.mems = mc.cc.mems[:last]
	delete(mc.pos, id)
}

// apply merges delta d: collections it does not list were dropped; for the
// others its tombstones are removed, then its memories upserted, then its
// sizes taken.
func (m *ckptMerger) apply(d checkpoint) {
	live := make(map[uint64]*mergeColl, len(d.colls))
	for _, dc := range d.colls {
		mc, ok := m.colls[dc.uid]
		if !ok {
			mc = newMergeColl(ckptCollection{uid: dc.uid, name: dc.name, cfg: dc.cfg})
		}
		mc.cc.cfg = dc.cfg // the indexed fields may have changed since

		for _, id := range dc.tombs {
			mc.remove(id)
		}
		for _, mem := range dc.mems {
			mc.upsert(mem, false)
		}
		mc.cc.nrows, mc.cc.paySize, mc.cc.nextID = dc.nrows, dc.paySize, dc.nextID
		mc.cc.sections = dc.sections // a delta carries them whole
		live[dc.uid] = mc
	}
	m.colls = live
	m.cp.walLSN, m.cp.nextUID = d.walLSN, d.nextUID
	m.cp.kind, m.cp.seq = d.kind, d.seq
}

func (m *ckptMerger) result() checkpoint {
	cp := m.cp
	cp.colls = cp.colls[:0:0]
	for _, mc := range m.colls {
		cc := mc.cc
		cc.tombs = nil
		cp.colls = append(cp.colls, cc)
	}
	slices.SortFunc(cp.colls, func(a, b ckptCollection) int { return cmp.Compare(a.uid, b.uid) })
	return cp
}

// checkBounds refuses a merged checkpoint with a memory past its
// collection's recorded file sizes (files only grow, so a delta that
// shrank them is damage, not a crash).
func (cp checkpoint) checkBounds() error {
	for _, c := range cp.colls {
		for _, mem := range c.mems {
			if !mem.inBounds(c.nrows, c.paySize) {
				return fmt.Errorf("%w: collection %q: memory %d lies past the recorded file sizes after applying the deltas", ErrCorruptCheckpoint, c.name, mem.id)
			}
		}
	}
	return nil
}
