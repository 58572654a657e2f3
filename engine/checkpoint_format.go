package engine

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/cespare/xxhash/v2"
)

// A checkpoint is a chain of files: a full checkpoint, CHECKPOINT, and the
// deltas written after it, CHECKPOINT.1, CHECKPOINT.2, ..., each holding
// only the memories changed (and the ids deleted) since the one before.
// Every file is replaced atomically (written to a temporary file, fsynced,
// renamed, folder fsynced). Together they hold the state of every
// collection as of some moment during the last checkpoint, and the WAL
// position from which replay must start to reach the present.
//
// Version 6, written as the collections are copied (a streaming encoder
// needs no buffer the size of the file):
//
//	+-----------+---------+------+---------+-----+---------+---------+-----------+----------------+-------+
//	| "MEMRLCKP"| version | kind | chainID | seq | walLSN  | nextUID | ncoll u32 | collections... | xxh64 |
//	| 8 bytes   | u32 = 6 | u8   | u64     | u32 | u64     | u64     |           |                | u64   |
//	+-----------+---------+------+---------+-----+---------+---------+-----------+----------------+-------+
//
//	kind:       0 full (seq 0), 1 delta (seq 1, 2, ... within the chain of the full
//	            checkpoint with the same chainID)
//	collection: uid u64 | name u16-len bytes | config (engine/config.go encodeConfig) |
//	            indexed fields (n u8 | n × name u8-len bytes; filter_index.go) |
//	            tombstone batches... | u32 0 | memory batches... | u32 0 |
//	            nrows u32 | paySize u64 | nextID u64 | collection sections
//	tombstone batch: count u32 (1..ckptMaxBatch) | count × id u64    (deltas only)
//	memory batch:    count u32 (1..ckptMaxBatch) | count × memory
//	memory:     id u64 | row u32 | payOff u64 | payLen u32 | created i64 | q f64 | visits u64 |
//	            lastReward f64 | rewardSum f64 | updated i64 |                   (72 bytes, then)
//	            expires i64 | key u16-len bytes | attrs u32-len bytes |         (15 bytes and up)
//	            memory sections
//
// expires is the absolute expiry (unix nanoseconds; 0: never), key the
// external key ("" for none), attrs the compact JSON attributes (empty for
// none); see attrs.go.
//
// A delta lists every live collection (one missing was dropped); applying
// it removes its tombstones, then inserts or replaces its memories, then
// takes its sizes and next id. The file sizes and next id follow the
// memories because they are read with the last chunk of the copy.
//
// Sections (checkpoint_sections.go) carry the state of later features:
// ghosts, compaction, history and so on, each under its own tag.
//
// Versions 1 to 5 are still read. Version 5 is version 6 without the
// collection and memory sections. Version 4 is version 5 without the
// indexed fields. Version 3 is version 4 with the memory
// record's first 72 bytes only (no expiry, key or attributes). Versions 1
// and 2 (full checkpoints only) are version 3 without kind, chainID, seq
// and tombstones. Version 1 held the
// sizes, and a u64 memory count, before one run of memories:
//
//	collection v1: uid | name | config | nrows u32 | paySize u64 | nextID u64 |
//	               nmem u64 | nmem × memory
//
// The trailing xxh64 covers every byte before it. nrows and paySize are the
// vector and payload file sizes that were fsynced before the checkpoint was
// written; recovery trusts nothing past them.
const (
	ckptMagic     = "MEMRLCKP"
	ckptVersion   = 6
	ckptName      = "CHECKPOINT"
	ckptMemSize   = 72      // a memory of versions 1 to 3; the least a version-4 memory takes too
	ckptMaxBatch  = 1 << 16 // memories per batch, at most
	ckptFlushSize = 1 << 20 // bytes the writer buffers before writing
)

// ErrCorruptCheckpoint is returned by Open when the checkpoint file fails
// its checksum, has an unknown version, or cannot be decoded. memrl never
// guesses past a damaged checkpoint: the operator restores it.
var ErrCorruptCheckpoint = errors.New("engine: corrupt checkpoint")

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
	ckptFull  = 0
	ckptDelta = 1
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
	cw.buf = append(cw.buf, ckptMagic...)
	cw.buf = le.AppendUint32(cw.buf, cw.version)
	cw.buf = append(cw.buf, kind)
	cw.buf = le.AppendUint64(cw.buf, chainID)
	cw.buf = le.AppendUint32(cw.buf, seq)
	cw.buf = le.AppendUint64(cw.buf, walLSN)
	cw.buf = le.AppendUint64(cw.buf, nextUID)
	cw.buf = le.AppendUint32(cw.buf, uint32(ncoll))
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
	var cp checkpoint
	if len(b) < len(ckptMagic)+4+8 || string(b[:len(ckptMagic)]) != ckptMagic {
		return cp, fmt.Errorf("%w: bad magic", ErrCorruptCheckpoint)
	}
	body, sum := b[:len(b)-8], le.Uint64(b[len(b)-8:])
	if xxhash.Sum64(body) != sum {
		return cp, fmt.Errorf("%w: checksum mismatch", ErrCorruptCheckpoint)
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
	version := d.U32()
	if version < 1 || version > ckptVersion {
		return cp, fmt.Errorf("%w: version %d, this build reads 1 to %d", ErrCorruptCheckpoint, version, ckptVersion)
	}
	if version >= 3 {
		cp.kind = d.U8()
		cp.chainID = d.U64()
		cp.seq = d.U32()
		if !d.Err && (cp.kind > ckptDelta || (cp.kind == ckptFull) != (cp.seq == 0)) {
			return cp, fmt.Errorf("%w: kind %d with sequence number %d", ErrCorruptCheckpoint, cp.kind, cp.seq)
		}
	}
	cp.walLSN = d.U64()
	cp.nextUID = d.U64()
	ncoll := d.U32()
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
