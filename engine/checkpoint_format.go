package engine

import (
	"fmt"
	"io"
	"slices"

	"github.com/memrl/memrl/engine/ckptfile"
)

// A checkpoint is a chain of files: a full checkpoint, CHECKPOINT, and the
// deltas written after it, CHECKPOINT.1, CHECKPOINT.2, ..., each holding
// only the memories changed (and the ids deleted) since the one before.
// Package ckptfile is the format's specification (its doc.go draws the
// layout of every version) and codes it: the frame (magic, header,
// trailing checksum), the collections and memories (ckptfile.Writer,
// ckptfile.DecodeBody) and the sections' framing. This file converts the
// engine's types to and from the format's, and checks what the format
// leaves to the engine: a collection's config and indexed fields, the
// bytes of a memory's sections, and that every memory lies within its
// collection's file sizes.
const (
	ckptMagic    = ckptfile.Magic
	ckptVersion  = ckptfile.Version
	ckptName     = "CHECKPOINT"
	ckptMemSize  = ckptfile.MemSize  // a memory of versions 1 to 3; the least a version-4 memory takes too
	ckptMaxBatch = ckptfile.MaxBatch // memories per batch, at most
)

// ErrCorruptCheckpoint is returned by Open when the checkpoint file fails
// its checksum, has an unknown version, or cannot be decoded. memrl never
// guesses past a damaged checkpoint: the operator restores it.
// It is ckptfile.ErrCorrupt, so errors.Is matches either.
var ErrCorruptCheckpoint = ckptfile.ErrCorrupt

type ckptMemory struct {
	sections   []ckptSection // version 6 on (checkpoint_sections.go)
	id         uint64
	m          memory
	q          float64
	visits     uint64
	lastReward float64
	rewardSum  float64
	updated    int64
}

type ckptCollection struct {
	uid     uint64
	name    string
	cfg     Config
	nrows   uint32
	paySize uint64
	nextID  uint64
	tombs   []uint64 // deltas: ids deleted since the previous file
	mems    []ckptMemory
	// sections: version 6 on (checkpoint_sections.go); a delta's replace
	// those before it.
	sections []ckptSection
}

// Checkpoint kinds.
const (
	ckptFull  = ckptfile.KindFull
	ckptDelta = ckptfile.KindDelta
)

type checkpoint struct {
	kind    uint8
	chainID uint64 // 0 in files of versions 1 and 2
	seq     uint32 // 0 for a full checkpoint
	walLSN  uint64
	nextUID uint64
	colls   []ckptCollection
}

// ckptWriter encodes a checkpoint onto w as it is produced
// (ckptfile.Writer), from the engine's types. Call header, then for each
// collection beginCollection, tombstones (once), memories (any number of
// times) and endCollection, then finish. The first write error is kept and
// returned by finish; later calls do nothing.
type ckptWriter struct {
	version uint32 // ckptVersion; tests set 3 to write the previous version
	fw      *ckptfile.Writer
}

func newCkptWriter(w io.Writer) *ckptWriter {
	return &ckptWriter{version: ckptVersion, fw: ckptfile.NewWriter(w)}
}

func (cw *ckptWriter) header(kind uint8, chainID uint64, seq uint32, walLSN, nextUID uint64, ncoll int) {
	cw.fw.Header(ckptfile.Header{Version: cw.version, Kind: kind, ChainID: chainID,
		Seq: seq, WalLSN: walLSN, NextUID: nextUID, NColl: uint32(ncoll)})
}

func (cw *ckptWriter) beginCollection(uid uint64, name string, cfg Config) {
	cw.fw.BeginCollection(ckptfile.Collection{UID: uid, Name: name, Config: recConfig(cfg), Indexed: cfg.Indexed})
}

// tombstones appends the collection's tombstone batches and their end.
func (cw *ckptWriter) tombstones(ids []uint64) { cw.fw.Tombstones(ids) }

// memories appends one or more batches holding mems, each read straight
// from mems (no copy of the slice).
func (cw *ckptWriter) memories(mems []ckptMemory) {
	cw.fw.Memories(len(mems), func(i int, m *ckptfile.Memory) { mems[i].fill(m) })
}

func (cw *ckptWriter) endCollection(nrows uint32, paySize, nextID uint64, sections []ckptSection) {
	cw.fw.EndCollection(ckptfile.End{NRows: nrows, PaySize: paySize, NextID: nextID, Sections: sections})
}

// finish writes the checksum and everything still buffered.
func (cw *ckptWriter) finish() error { return cw.fw.Finish() }

// fill sets every field of *f from m.
func (m *ckptMemory) fill(f *ckptfile.Memory) {
	x := m.m.extOrZero()
	*f = ckptfile.Memory{ID: m.id, Row: m.m.row, PayOff: m.m.payOff, PayLen: m.m.payLen, Created: m.m.created,
		Q: m.q, Visits: m.visits, LastReward: m.lastReward, RewardSum: m.rewardSum, Updated: m.updated,
		Expires: x.expires, Key: x.key, Attrs: x.attrs, Sections: m.sections}
}

// appendCkptMemoryV3 appends the record of versions 1 to 3 (the first 72
// bytes of version 4's).
func appendCkptMemoryV3(b []byte, m ckptMemory) []byte {
	var f ckptfile.Memory
	m.fill(&f)
	return ckptfile.AppendMemory(b, 3, &f)
}

// inBounds reports whether m's row and payload range lie within a vector
// file of nrows rows and a payload file of paySize bytes
// (ckptfile.Memory.InBounds).
func (m ckptMemory) inBounds(nrows uint32, paySize uint64) bool {
	f := ckptfile.Memory{Row: m.m.row, PayOff: m.m.payOff, PayLen: m.m.payLen}
	return f.InBounds(nrows, paySize)
}

func decodeCheckpoint(b []byte) (checkpoint, error) {
	body, err := ckptfile.Verify(b)
	if err != nil {
		return checkpoint{}, err
	}
	cp, _, err := decodeCheckpointBody(body)
	return cp, err
}

// decodeCheckpointBody decodes a checkpoint's bytes after the magic and
// before the checksum, and returns the offset (from the start of the file)
// where it stopped: on an error, the collections decoded before it, for
// inspection (memrl dump checkpoint).
func decodeCheckpointBody(body []byte) (checkpoint, int, error) {
	d := &decoder{B: body[len(ckptMagic):]}
	cp, err := decodeCheckpointFrom(d)
	return cp, len(body) - len(d.B), err
}

// decodeCheckpointFrom decodes a checkpoint through ckptfile.DecodeBody,
// which hands each memory to the engine as it reads it: the memory is
// built once, in its batch's slice, and the batches are joined once per
// collection.
func decodeCheckpointFrom(d *decoder) (checkpoint, error) {
	var cp checkpoint
	var c ckptCollection
	// Each batch is decoded into a slice of its own size and the batches
	// are joined once at the end. Why: appending a million memories to
	// one slice grew it thirty-odd times, each a copy into freshly faulted
	// memory: 1.9 s of a 5.9 s Open at 1M (growslice's memmove and page
	// faults).
	var batches [][]ckptMemory
	total := 0
	h, err := ckptfile.DecodeBody(d, ckptfile.Visitor{
		KnownCollSection: knownCollSection,
		KnownMemSection:  knownMemSection,
		Collection: func(x ckptfile.Collection) error {
			c = ckptCollection{uid: x.UID, name: x.Name, cfg: configOf(x.Config)}
			c.cfg.Indexed = x.Indexed
			batches, total = batches[:0], 0
			if err := checkFieldList(c.cfg.Indexed); err != nil {
				return err
			}
			// Only valid configs are ever written; an invalid one (a zero
			// dimension would divide by a zero row size) is damage.
			return c.cfg.Validate()
		},
		Tombstone: func(id uint64) { c.tombs = append(c.tombs, id) },
		Batch: func(n int) {
			batches = append(batches, make([]ckptMemory, 0, n))
		},
		Memory: func(x *ckptfile.Memory) error {
			if err := checkMemSections(x.Sections); err != nil {
				return err
			}
			b := &batches[len(batches)-1]
			*b = append(*b, ckptMemory{sections: x.Sections, id: x.ID,
				m: memory{row: x.Row, payOff: x.PayOff, payLen: x.PayLen, created: x.Created,
					ext: makeExt(x.Attrs, x.Key, x.Expires)},
				q: x.Q, visits: x.Visits, lastReward: x.LastReward, rewardSum: x.RewardSum, updated: x.Updated})
			total++
			return nil
		},
		End: func(e ckptfile.End) error {
			c.mems = slices.Grow(c.mems, total)
			for _, b := range batches {
				c.mems = append(c.mems, b...)
			}
			c.nrows, c.paySize, c.nextID, c.sections = e.NRows, e.PaySize, e.NextID, e.Sections
			// Loading trusts rows and payload ranges, so a checkpoint
			// whose checksum verifies but that points past its own file
			// sizes (a bug, never a torn write) is refused, not indexed.
			for _, m := range c.mems {
				if !d.Err && !m.inBounds(c.nrows, c.paySize) {
					return fmt.Errorf("memory %d lies past the recorded file sizes", m.id)
				}
			}
			cp.colls = append(cp.colls, c)
			return nil
		},
	})
	// On an error too: what was read is shown by memrl dump checkpoint.
	cp.kind, cp.chainID, cp.seq, cp.walLSN, cp.nextUID = h.Kind, h.ChainID, h.Seq, h.WalLSN, h.NextUID
	return cp, err
}
