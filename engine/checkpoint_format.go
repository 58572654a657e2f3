package engine

import (
	"bytes"
	"fmt"
	"io"
	"slices"

	"github.com/cespare/xxhash/v2"

	"github.com/memrl/memrl/engine/ckptfile"
)

// A checkpoint is a chain of files: a full checkpoint, CHECKPOINT, and the
// deltas written after it, CHECKPOINT.1, CHECKPOINT.2, ..., each holding
// only the memories changed (and the ids deleted) since the one before.
// Package ckptfile is the format's specification (its doc.go draws the
// layout of every version) and codes the file's frame: magic, header,
// trailing checksum. This file encodes and decodes what lies between them:
// collections and memories, which are the engine's types.
const (
	ckptMagic     = ckptfile.Magic
	ckptVersion   = ckptfile.Version
	ckptName      = "CHECKPOINT"
	ckptMemSize   = ckptfile.MemSize  // a memory of versions 1 to 3; the least a version-4 memory takes too
	ckptMaxBatch  = ckptfile.MaxBatch // memories per batch, at most
	ckptFlushSize = 1 << 20           // bytes the writer buffers before writing
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

// ckptWriter encodes a version-5 checkpoint onto w as it is produced,
// hashing every byte. Call header, then for each collection
// beginCollection, tombstones (once), memories (any number of times) and
// endCollection, then finish. The first
// write error is kept and returned by finish; later calls do nothing.
type ckptWriter struct {
	version uint32 // ckptVersion; tests set 3 to write the previous version
	w       io.Writer
	h       *xxhash.Digest
	buf     []byte // encoded bytes not yet written to w
	err     error
}

func newCkptWriter(w io.Writer) *ckptWriter {
	return &ckptWriter{version: ckptVersion, w: w, h: xxhash.New(), buf: make([]byte, 0, ckptFlushSize+ckptMaxBatch)}
}

func (cw *ckptWriter) header(kind uint8, chainID uint64, seq uint32, walLSN, nextUID uint64, ncoll int) {
	cw.buf = ckptfile.AppendHeader(cw.buf, ckptfile.Header{Version: cw.version, Kind: kind, ChainID: chainID,
		Seq: seq, WalLSN: walLSN, NextUID: nextUID, NColl: uint32(ncoll)})
}

func (cw *ckptWriter) beginCollection(uid uint64, name string, cfg Config) {
	cw.buf = le.AppendUint64(cw.buf, uid)
	cw.buf = le.AppendUint16(cw.buf, uint16(len(name)))
	cw.buf = append(cw.buf, name...)
	cw.buf = encodeConfig(cw.buf, cfg)
	if cw.version >= 5 {
		cw.buf = appendFieldList(cw.buf, cfg.Indexed)
	}
}

// tombstones appends the collection's tombstone batches and their end.
func (cw *ckptWriter) tombstones(ids []uint64) {
	for len(ids) > 0 {
		n := min(len(ids), ckptMaxBatch)
		cw.buf = le.AppendUint32(cw.buf, uint32(n))
		for _, id := range ids[:n] {
			cw.buf = le.AppendUint64(cw.buf, id)
			if len(cw.buf) >= ckptFlushSize {
				cw.flush()
			}
		}
		ids = ids[n:]
	}
	cw.buf = le.AppendUint32(cw.buf, 0)
}

// memories appends one or more batches holding mems.
func (cw *ckptWriter) memories(mems []ckptMemory) {
	for len(mems) > 0 {
		n := min(len(mems), ckptMaxBatch)
		cw.buf = le.AppendUint32(cw.buf, uint32(n))
		for _, m := range mems[:n] {
			if cw.version >= 6 {
				cw.buf = appendCkptMemory(cw.buf, m)
				cw.buf = appendMemSections(cw.buf, m.sections)
			} else if cw.version >= 4 {
				cw.buf = appendCkptMemory(cw.buf, m)
			} else {
				cw.buf = appendCkptMemoryV3(cw.buf, m)
			}
			if len(cw.buf) >= ckptFlushSize {
				cw.flush()
			}
		}
		mems = mems[n:]
	}
}

func (cw *ckptWriter) endCollection(nrows uint32, paySize, nextID uint64, sections []ckptSection) {
	cw.buf = le.AppendUint32(cw.buf, 0)
	cw.buf = le.AppendUint32(cw.buf, nrows)
	cw.buf = le.AppendUint64(cw.buf, paySize)
	cw.buf = le.AppendUint64(cw.buf, nextID)
	if cw.version >= 6 {
		cw.buf = appendCollSections(cw.buf, sections)
	}
	if len(cw.buf) >= ckptFlushSize {
		cw.flush()
	}
}

// finish writes the checksum and everything still buffered.
func (cw *ckptWriter) finish() error {
	cw.flush()
	if cw.err == nil {
		cw.buf = le.AppendUint64(cw.buf, cw.h.Sum64())
		_, cw.err = cw.w.Write(cw.buf)
		cw.buf = cw.buf[:0]
	}
	return cw.err
}

func (cw *ckptWriter) flush() {
	if cw.err == nil && len(cw.buf) > 0 {
		cw.h.Write(cw.buf)
		_, cw.err = cw.w.Write(cw.buf)
	}
	cw.buf = cw.buf[:0]
}

// appendCkptMemory appends m's version-4 record.
func appendCkptMemory(b []byte, m ckptMemory) []byte {
	b = appendCkptMemoryV3(b, m)
	x := m.m.extOrZero()
	b = le.AppendUint64(b, uint64(x.expires))
	b = le.AppendUint16(b, uint16(len(x.key)))
	b = append(b, x.key...)
	b = le.AppendUint32(b, uint32(len(x.attrs)))
	return append(b, x.attrs...)
}

// appendCkptMemoryV3 appends the record of versions 1 to 3 (the first 72
// bytes of version 4's).
func appendCkptMemoryV3(b []byte, m ckptMemory) []byte {
	b = le.AppendUint64(b, m.id)
	b = le.AppendUint32(b, m.m.row)
	b = le.AppendUint64(b, m.m.payOff)
	b = le.AppendUint32(b, m.m.payLen)
	b = le.AppendUint64(b, uint64(m.m.created))
	b = putF64(b, m.q)
	b = le.AppendUint64(b, m.visits)
	b = putF64(b, m.lastReward)
	b = putF64(b, m.rewardSum)
	return le.AppendUint64(b, uint64(m.updated))
}

// inBounds reports whether m's row and payload range lie within a vector
// file of nrows rows and a payload file of paySize bytes. The payload test
// cannot overflow: an offset near 2^64 plus a length must not wrap to a
// small end.
func (m ckptMemory) inBounds(nrows uint32, paySize uint64) bool {
	return m.m.row < nrows && uint64(m.m.payLen) <= paySize && m.m.payOff <= paySize-uint64(m.m.payLen)
}

func decodeCkptMemory(d *decoder, version uint32) (ckptMemory, error) {
	var m ckptMemory
	m.id = d.U64()
	m.m.row = d.U32()
	m.m.payOff = d.U64()
	m.m.payLen = d.U32()
	m.m.created = int64(d.U64())
	m.q = d.F64()
	m.visits = d.U64()
	m.lastReward = d.F64()
	m.rewardSum = d.F64()
	m.updated = int64(d.U64())
	if version >= 4 {
		expires := int64(d.U64())
		key := string(d.Take(int(d.U16())))
		var attrs []byte
		if n := d.U32(); n > 0 {
			attrs = bytes.Clone(d.Take(int(n))) // the file's buffer is not kept
		}
		m.m.ext = makeExt(attrs, key, expires)
	}
	if version >= 6 {
		var err error
		m.sections, err = decodeSections(d, int(d.U8()), func() uint16 { return uint16(d.U8()) }, knownMemSection)
		if err == nil {
			err = checkMemSections(m.sections)
		}
		if err != nil {
			return m, fmt.Errorf("memory %d: %v", m.id, err)
		}
	}
	return m, nil
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

func decodeCheckpointFrom(d *decoder) (checkpoint, error) {
	var cp checkpoint
	h, err := ckptfile.DecodeHeader(d)
	// On an error too: what was read is shown by memrl dump checkpoint.
	cp.kind, cp.chainID, cp.seq, cp.walLSN, cp.nextUID = h.Kind, h.ChainID, h.Seq, h.WalLSN, h.NextUID
	if err != nil {
		return cp, err
	}
	version, ncoll := h.Version, h.NColl
	for i := uint32(0); i < ncoll && !d.Err; i++ {
		var c ckptCollection
		c.uid = d.U64()
		c.name = string(d.Take(int(d.U16())))
		c.cfg = decodeConfig(d)
		if version >= 5 {
			c.cfg.Indexed = decodeFieldList(d)
			if err := checkFieldList(c.cfg.Indexed); !d.Err && err != nil {
				return cp, fmt.Errorf("%w: collection %q: %v", ErrCorruptCheckpoint, c.name, err)
			}
		}
		// Only valid configs are ever written; an invalid one (a zero
		// dimension would divide by a zero row size) is damage.
		if err := c.cfg.Validate(); !d.Err && err != nil {
			return cp, fmt.Errorf("%w: collection %q: %v", ErrCorruptCheckpoint, c.name, err)
		}
		if version == 1 {
			c.nrows = d.U32()
			c.paySize = d.U64()
			c.nextID = d.U64()
			nmem := d.U64()
			if nmem > uint64(len(d.B))/ckptMemSize {
				return cp, fmt.Errorf("%w: collection %q claims %d memories", ErrCorruptCheckpoint, c.name, nmem)
			}
			for range nmem {
				m, _ := decodeCkptMemory(d, version) // no sections before version 6
				c.mems = append(c.mems, m)
			}
		} else {
			for version >= 3 && !d.Err {
				n := d.U32()
				if n == 0 {
					break
				}
				if cp.kind == ckptFull {
					return cp, fmt.Errorf("%w: collection %q: tombstones in a full checkpoint", ErrCorruptCheckpoint, c.name)
				}
				if n > ckptMaxBatch || uint64(n) > uint64(len(d.B))/8 {
					return cp, fmt.Errorf("%w: collection %q: batch of %d tombstones", ErrCorruptCheckpoint, c.name, n)
				}
				for range n {
					c.tombs = append(c.tombs, d.U64())
				}
			}
			// Each batch is decoded into a slice of its own size and the
			// batches are joined once at the end. Why: appending a
			// million memories to one slice grew it thirty-odd times, each
			// a copy into freshly faulted memory: 1.9 s of a 5.9 s Open at
			// 1M (growslice's memmove and page faults).
			var batches [][]ckptMemory
			total := 0
			for !d.Err {
				n := d.U32()
				if n == 0 {
					break
				}
				if n > ckptMaxBatch || uint64(n) > uint64(len(d.B))/ckptMemSize {
					return cp, fmt.Errorf("%w: collection %q: batch of %d memories", ErrCorruptCheckpoint, c.name, n)
				}
				batch := make([]ckptMemory, 0, n)
				for range n {
					m, err := decodeCkptMemory(d, version)
					if err != nil {
						return cp, fmt.Errorf("%w: collection %q: %v", ErrCorruptCheckpoint, c.name, err)
					}
					batch = append(batch, m)
				}
				batches = append(batches, batch)
				total += len(batch)
			}
			c.mems = slices.Grow(c.mems, total)
			for _, b := range batches {
				c.mems = append(c.mems, b...)
			}
			c.nrows = d.U32()
			c.paySize = d.U64()
			c.nextID = d.U64()
			if version >= 6 {
				var err error
				c.sections, err = decodeSections(d, int(d.U16()), d.U16, knownCollSection)
				if err != nil {
					return cp, fmt.Errorf("%w: collection %q: %v", ErrCorruptCheckpoint, c.name, err)
				}
			}
		}
		// Loading trusts rows and payload ranges, so a checkpoint whose
		// checksum verifies but that points past its own file sizes (a
		// bug, never a torn write) is refused, not indexed.
		for _, m := range c.mems {
			if !d.Err && !m.inBounds(c.nrows, c.paySize) {
				return cp, fmt.Errorf("%w: collection %q: memory %d lies past the recorded file sizes", ErrCorruptCheckpoint, c.name, m.id)
			}
		}
		cp.colls = append(cp.colls, c)
	}
	if err := d.Done("checkpoint"); err != nil {
		return cp, fmt.Errorf("%w: %v", ErrCorruptCheckpoint, err)
	}
	return cp, nil
}
