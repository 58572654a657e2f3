package ckptfile

import (
	"bytes"
	"fmt"
	"io"
	"math"

	"github.com/cespare/xxhash/v2"

	"github.com/memrl/memrl/engine/record"
)

// Collection is a collection's head: what the file holds of it before its
// tombstones and memories.
type Collection struct {
	UID     uint64
	Name    string
	Config  record.Config // the layout a create record carries too
	Indexed []string      // the fields indexed (record's field list); version 5 on
}

// End is what the file holds of a collection after its memories: the
// sizes of its files and its next id, read with the last chunk of the
// copy, and its sections.
type End struct {
	NRows    uint32 // vector rows fsynced before the file was written
	PaySize  uint64 // payload bytes fsynced before the file was written
	NextID   uint64
	Sections []Section // version 6 on
}

// Memory is one memory's record.
type Memory struct {
	ID         uint64
	Row        uint32 // the vector file's row
	PayOff     uint64 // payload bytes [PayOff, PayOff+PayLen)
	PayLen     uint32
	Created    int64 // unix nanoseconds
	Q          float64
	Visits     uint64
	LastReward float64
	RewardSum  float64
	Updated    int64     // unix nanoseconds
	Expires    int64     // unix nanoseconds, 0 for never; version 4 on
	Key        string    // external key, "" for none; version 4 on
	Attrs      []byte    // compact JSON attributes, nil for none; version 4 on
	Sections   []Section // version 6 on
}

// InBounds reports whether m's row and payload range lie within a vector
// file of nrows rows and a payload file of paySize bytes. The payload test
// cannot overflow: an offset near 2^64 plus a length must not wrap to a
// small end.
func (m *Memory) InBounds(nrows uint32, paySize uint64) bool {
	return m.Row < nrows && uint64(m.PayLen) <= paySize && m.PayOff <= paySize-uint64(m.PayLen)
}

// AppendMemory appends m's record of the given version: the first 72
// bytes (MemSize) in every version, then from version 4 the expiry, key
// and attributes, then from version 6 the memory's sections.
// REQUIRES: 1 <= version <= Version; m.Key fits a u16 length, m.Attrs a
// u32 one, m.Sections AppendMemSections.
func AppendMemory(b []byte, version uint32, m *Memory) []byte {
	b = le.AppendUint64(b, m.ID)
	b = le.AppendUint32(b, m.Row)
	b = le.AppendUint64(b, m.PayOff)
	b = le.AppendUint32(b, m.PayLen)
	b = le.AppendUint64(b, uint64(m.Created))
	b = putF64(b, m.Q)
	b = le.AppendUint64(b, m.Visits)
	b = putF64(b, m.LastReward)
	b = putF64(b, m.RewardSum)
	b = le.AppendUint64(b, uint64(m.Updated))
	if version >= 4 {
		b = le.AppendUint64(b, uint64(m.Expires))
		b = le.AppendUint16(b, uint16(len(m.Key)))
		b = append(b, m.Key...)
		b = le.AppendUint32(b, uint32(len(m.Attrs)))
		b = append(b, m.Attrs...)
	}
	if version >= 6 {
		b = AppendMemSections(b, m.Sections)
	}
	return b
}

func putF64(b []byte, f float64) []byte { return le.AppendUint64(b, math.Float64bits(f)) }

// flushSize is how many bytes a Writer buffers before writing.
const flushSize = 1 << 20

// Writer encodes a checkpoint file of versions 3 to Version onto an
// io.Writer as it is produced, hashing every byte, so that no buffer the
// size of the file is needed. Call Header, then for each collection
// BeginCollection, Tombstones (once), Memories (any number of times) and
// EndCollection, then Finish. The first write error is kept and returned
// by Finish; later calls do nothing. A Writer is not safe for concurrent
// use.
type Writer struct {
	version uint32
	w       io.Writer
	h       *xxhash.Digest
	buf     []byte // encoded bytes not yet written to w
	mem     Memory // Memories' record, reused
	err     error
}

// NewWriter returns a Writer onto w.
func NewWriter(w io.Writer) *Writer {
	return &Writer{version: Version, w: w, h: xxhash.New(), buf: make([]byte, 0, flushSize+MaxBatch)}
}

// Header appends the file's header (AppendHeader); the file is written in
// h.Version. REQUIRES: 3 <= h.Version <= Version (versions 1 and 2 are
// read, never written).
func (w *Writer) Header(h Header) {
	w.version = h.Version
	w.buf = AppendHeader(w.buf, h)
}

// BeginCollection appends a collection's head.
// REQUIRES: c.Name fits a u16 length; c.Indexed fits a field list.
func (w *Writer) BeginCollection(c Collection) {
	w.buf = le.AppendUint64(w.buf, c.UID)
	w.buf = le.AppendUint16(w.buf, uint16(len(c.Name)))
	w.buf = append(w.buf, c.Name...)
	w.buf = record.AppendConfig(w.buf, c.Config)
	if w.version >= 5 {
		w.buf = record.AppendFieldList(w.buf, c.Indexed)
	}
}

// Tombstones appends the collection's tombstone batches and their end.
// REQUIRES: ids is empty in a full checkpoint.
func (w *Writer) Tombstones(ids []uint64) {
	for len(ids) > 0 {
		n := min(len(ids), MaxBatch)
		w.buf = le.AppendUint32(w.buf, uint32(n))
		for _, id := range ids[:n] {
			w.buf = le.AppendUint64(w.buf, id)
			if len(w.buf) >= flushSize {
				w.flush()
			}
		}
		ids = ids[n:]
	}
	w.buf = le.AppendUint32(w.buf, 0)
}

// Memories appends one or more batches holding n memories, the i-th of
// which at fills in (into a record reused for the next: at must set every
// field). Taking the memories through at, not as a slice, lets the
// caller encode its own structs without copying them into Memory's first.
func (w *Writer) Memories(n int, at func(i int, m *Memory)) {
	for i := 0; i < n; {
		k := min(n-i, MaxBatch)
		w.buf = le.AppendUint32(w.buf, uint32(k))
		for end := i + k; i < end; i++ {
			at(i, &w.mem)
			w.buf = AppendMemory(w.buf, w.version, &w.mem)
			if len(w.buf) >= flushSize {
				w.flush()
			}
		}
	}
}

// EndCollection ends the memory batches and appends e.
func (w *Writer) EndCollection(e End) {
	w.buf = le.AppendUint32(w.buf, 0)
	w.buf = le.AppendUint32(w.buf, e.NRows)
	w.buf = le.AppendUint64(w.buf, e.PaySize)
	w.buf = le.AppendUint64(w.buf, e.NextID)
	if w.version >= 6 {
		w.buf = AppendCollSections(w.buf, e.Sections)
	}
	if len(w.buf) >= flushSize {
		w.flush()
	}
}

// Finish writes the checksum and everything still buffered, and returns
// the first write error.
func (w *Writer) Finish() error {
	w.flush()
	if w.err == nil {
		w.buf = le.AppendUint64(w.buf, w.h.Sum64())
		_, w.err = w.w.Write(w.buf)
		w.buf = w.buf[:0]
	}
	return w.err
}

func (w *Writer) flush() {
	if w.err == nil && len(w.buf) > 0 {
		w.h.Write(w.buf)
		_, w.err = w.w.Write(w.buf)
	}
	w.buf = w.buf[:0]
}

// Visitor receives what DecodeBody reads, in the file's order: for each
// collection, Collection, then Tombstone for each id (deltas), then for
// each batch of memories Batch and Memory for each, then End. Every field
// must be set.
//
// A callback may read the decoder's Err: once set, the file was cut
// short, every value read since is zero, and DecodeBody will refuse the
// file. Collection and End are still called then (so that a reader
// inspecting a damaged file sees what was read), and an error they return
// is ignored: the file is refused as cut short.
type Visitor struct {
	// KnownCollSection and KnownMemSection report whether the reader
	// understands a section tag; an unknown tag is refused (Sections in
	// doc.go).
	KnownCollSection func(tag uint16) bool
	KnownMemSection  func(tag uint16) bool
	// Collection receives a collection's head. An error refuses the file:
	// DecodeBody wraps it in ErrCorrupt, naming the collection.
	Collection func(Collection) error
	// Tombstone receives an id the delta deleted.
	Tombstone func(id uint64)
	// Batch announces n memories (1..MaxBatch) before them, so that the
	// caller can allocate for them once.
	Batch func(n int)
	// Memory receives a memory. *m is reused for the next memory once
	// Memory returns; its Key, Attrs and Sections are the memory's own
	// (copied out of the file's buffer) and may be kept. An error refuses
	// the file: DecodeBody wraps it in ErrCorrupt, naming the collection
	// and the memory.
	Memory func(m *Memory) error
	// End receives the collection's sizes and sections after its
	// memories. The caller checks that every memory lies within the sizes
	// (Memory.InBounds), as the sizes follow the memories; an error
	// refuses the file, wrapped as Collection's.
	End func(End) error
}

// DecodeBody decodes a checkpoint's bytes after its magic and before its
// checksum from d, handing each collection and memory to v as it is read
// (so that nothing is decoded into a structure of this package's and
// copied again). It returns the header, which on an error holds what was
// read of it. It refuses, with an error wrapping ErrCorrupt, what
// DecodeHeader refuses, a count of memories that cannot fit in the bytes
// left, a batch above MaxBatch, tombstones in a full checkpoint, an
// unknown or repeated section tag, what v's callbacks refuse, and a file
// cut short or with bytes past its last collection.
func DecodeBody(d *record.Decoder, v Visitor) (Header, error) {
	h, err := DecodeHeader(d)
	if err != nil {
		return h, err
	}
	for i := uint32(0); i < h.NColl && !d.Err; i++ {
		if err := decodeCollection(d, h, v); err != nil {
			return h, err
		}
	}
	if err := d.Done("checkpoint"); err != nil {
		return h, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return h, nil
}

func decodeCollection(d *record.Decoder, h Header, v Visitor) error {
	var c Collection
	c.UID = d.U64()
	c.Name = string(d.Take(int(d.U16())))
	c.Config = record.DecodeConfig(d)
	if h.Version >= 5 {
		c.Indexed = record.DecodeFieldList(d)
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: collection %q: "+format, append([]any{ErrCorrupt, c.Name}, a...)...)
	}
	if err := v.Collection(c); err != nil && !d.Err {
		return bad("%v", err)
	}
	var e End
	var m Memory
	if h.Version == 1 {
		e.NRows, e.PaySize, e.NextID = d.U32(), d.U64(), d.U64()
		nmem := d.U64()
		if nmem > uint64(len(d.B))/MemSize {
			return fmt.Errorf("%w: collection %q claims %d memories", ErrCorrupt, c.Name, nmem)
		}
		if nmem > 0 {
			v.Batch(int(nmem))
		}
		for range nmem {
			if err := decodeMemory(d, h.Version, v, &m); err != nil {
				return bad("%v", err)
			}
		}
	} else {
		for h.Version >= 3 && !d.Err {
			n := d.U32()
			if n == 0 {
				break
			}
			if h.Kind == KindFull {
				return bad("tombstones in a full checkpoint")
			}
			if n > MaxBatch || uint64(n) > uint64(len(d.B))/8 {
				return bad("batch of %d tombstones", n)
			}
			for range n {
				v.Tombstone(d.U64())
			}
		}
		for !d.Err {
			n := d.U32()
			if n == 0 {
				break
			}
			if n > MaxBatch || uint64(n) > uint64(len(d.B))/MemSize {
				return bad("batch of %d memories", n)
			}
			v.Batch(int(n))
			for range n {
				if err := decodeMemory(d, h.Version, v, &m); err != nil {
					return bad("%v", err)
				}
			}
		}
		e.NRows, e.PaySize, e.NextID = d.U32(), d.U64(), d.U64()
		if h.Version >= 6 {
			var err error
			if e.Sections, err = DecodeSections(d, int(d.U16()), d.U16, v.KnownCollSection); err != nil {
				return bad("%v", err)
			}
		}
	}
	if err := v.End(e); err != nil && !d.Err {
		return bad("%v", err)
	}
	return nil
}

// decodeMemory reads a memory of the given version into *m and hands it
// to v.Memory.
func decodeMemory(d *record.Decoder, version uint32, v Visitor, m *Memory) error {
	m.ID = d.U64()
	m.Row = d.U32()
	m.PayOff = d.U64()
	m.PayLen = d.U32()
	m.Created = int64(d.U64())
	m.Q = d.F64()
	m.Visits = d.U64()
	m.LastReward = d.F64()
	m.RewardSum = d.F64()
	m.Updated = int64(d.U64())
	m.Expires, m.Key, m.Attrs, m.Sections = 0, "", nil, nil
	if version >= 4 {
		m.Expires = int64(d.U64())
		m.Key = string(d.Take(int(d.U16())))
		if n := d.U32(); n > 0 {
			m.Attrs = bytes.Clone(d.Take(int(n))) // the file's buffer is not kept
		}
	}
	if version >= 6 {
		var err error
		m.Sections, err = DecodeSections(d, int(d.U8()), func() uint16 { return uint16(d.U8()) }, v.KnownMemSection)
		if err != nil {
			return fmt.Errorf("memory %d: %v", m.ID, err)
		}
	}
	if err := v.Memory(m); err != nil {
		return fmt.Errorf("memory %d: %v", m.ID, err)
	}
	return nil
}
