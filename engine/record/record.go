package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Record types: the first byte of every body. Every type the engine logs
// is listed here, those whose codec is still the engine's too, so that no
// number is given twice. A change of a body's layout gets a new number.
const (
	TypeCreate        byte = 1  // Create
	TypeDrop          byte = 2  // Drop
	TypeAdd           byte = 3  // Add without attributes, key or expiry
	TypeDelete        byte = 4  // Delete
	TypeQ             byte = 5  // Q
	TypeAddExt        byte = 6  // Add with attributes, a key or an expiry
	TypeSetAttrs      byte = 7  // SetAttrs
	TypeSetPayload    byte = 8  // SetPayload
	TypeExpire        byte = 9  // Expire
	TypeIndexed       byte = 10 // Indexed
	TypeCreateIndexed byte = 11 // Create with fields
	TypeSnapshot      byte = 12 // Snapshot
	TypeDelSnapshot   byte = 13 // DelSnapshot
	TypeRollback      byte = 14 // Rollback
	// 15 and 16 are not used.
	TypePrunePolicy   byte = 17 // PrunePolicy
	TypeRollbackBatch byte = 18 // RollbackBatch
	TypeGroupMember   byte = 19 // EncodeGroupMember
	TypeGroupCommit   byte = 20 // GroupCommit
	TypeGroupAbort    byte = 21 // EncodeGroupAbort
	TypeRemap         byte = 22 // Remap
	TypeReplace       byte = 23 // Replace
	TypeImport        byte = 24 // EncodeImport
)

// ErrBad wraps every decoding failure; a record that the WAL's checksum
// accepted but that does not decode means a bug or a log from a newer
// version.
var ErrBad = errors.New("engine: malformed log record")

var le = binary.LittleEndian

func putF64(b []byte, f float64) []byte { return le.AppendUint64(b, math.Float64bits(f)) }

// Add adds a memory: TypeAdd, or TypeAddExt when it has attributes, a key
// or an expiry (HasExt).
type Add struct {
	UID, ID uint64
	Row     uint32 // the vector file's row chosen
	PayOff  uint64 // the payload file's offset chosen
	Created int64  // unix nanoseconds
	Q       float64
	Payload []byte
	Vec     []float32
	Attrs   []byte // compact JSON object, or nil
	Key     string // external key, or ""
	Expires int64  // unix nanoseconds, or 0 for never
}

// Delete deletes memories.
type Delete struct {
	UID uint64
	IDs []uint64
}

// Q is a memory's new utility and counters after an update.
type Q struct {
	UID, ID    uint64
	Q          float64
	Visits     uint64
	LastReward float64
	RewardSum  float64
	Updated    int64 // unix nanoseconds
}

// EncodeDrop returns the body that drops collection uid.
func EncodeDrop(uid uint64) []byte {
	return le.AppendUint64([]byte{TypeDrop}, uid)
}

// EncodeAdd returns r's body: TypeAddExt when r.HasExt, else TypeAdd.
// REQUIRES: r.Key, r.Attrs and r.Payload fit their length fields (the
// engine's limits are far below).
func EncodeAdd(r Add) []byte {
	if r.HasExt() {
		return encodeAddExt(r)
	}
	b := make([]byte, 0, 53+len(r.Payload)+4*len(r.Vec))
	b = append(b, TypeAdd)
	b = le.AppendUint64(b, r.UID)
	b = le.AppendUint64(b, r.ID)
	b = le.AppendUint32(b, r.Row)
	b = le.AppendUint64(b, r.PayOff)
	b = le.AppendUint64(b, uint64(r.Created))
	b = putF64(b, r.Q)
	b = le.AppendUint32(b, uint32(len(r.Payload)))
	b = append(b, r.Payload...)
	for _, f := range r.Vec {
		b = le.AppendUint32(b, math.Float32bits(f))
	}
	return b
}

// EncodeDelete returns r's body.
func EncodeDelete(r Delete) []byte {
	b := make([]byte, 0, 13+8*len(r.IDs))
	b = append(b, TypeDelete)
	b = le.AppendUint64(b, r.UID)
	b = le.AppendUint32(b, uint32(len(r.IDs)))
	for _, id := range r.IDs {
		b = le.AppendUint64(b, id)
	}
	return b
}

// QSize is the size of a TypeQ body.
const QSize = 57

// EncodeQ returns r's body.
func EncodeQ(r Q) []byte { return AppendQ(make([]byte, 0, QSize), r) }

// AppendQ appends r's body to b; the reward path encodes into a stack
// buffer with it (the log copies the record).
func AppendQ(b []byte, r Q) []byte {
	b = append(b, TypeQ)
	b = le.AppendUint64(b, r.UID)
	b = le.AppendUint64(b, r.ID)
	b = putF64(b, r.Q)
	b = le.AppendUint64(b, r.Visits)
	b = putF64(b, r.LastReward)
	b = putF64(b, r.RewardSum)
	b = le.AppendUint64(b, uint64(r.Updated))
	return b
}

// DecodeDrop decodes a TypeDrop body. REQUIRES: b[0] is TypeDrop.
func DecodeDrop(b []byte) (uint64, error) {
	d := Decoder{B: b[1:]}
	uid := d.U64()
	return uid, d.Done("drop")
}

// DecodeAdd decodes a TypeAdd or TypeAddExt body whose vector has dim
// components (dim < 0: whatever the body holds, for inspection without
// the collection's config). The payload and attributes alias b.
// REQUIRES: b[0] is TypeAdd or TypeAddExt.
func DecodeAdd(b []byte, dim int) (Add, error) {
	d := Decoder{B: b[1:]}
	ext := b[0] == TypeAddExt // else TypeAdd
	var r Add
	r.UID = d.U64()
	r.ID = d.U64()
	r.Row = d.U32()
	r.PayOff = d.U64()
	r.Created = int64(d.U64())
	r.Q = d.F64()
	if ext {
		r.Expires = int64(d.U64())
		r.Key = string(d.Take(int(d.U16())))
		if n := d.U32(); n > 0 {
			r.Attrs = d.Take(int(n))
		}
	}
	r.Payload = d.Take(int(d.U32()))
	if d.Err {
		return r, fmt.Errorf("%w: bad add record", ErrBad)
	}
	if ext && !r.HasExt() {
		// Canonical encoding: such an add is logged as TypeAdd.
		return r, fmt.Errorf("%w: extended add record without attributes, key or expiry", ErrBad)
	}
	if dim < 0 && len(d.B)%4 == 0 {
		dim = len(d.B) / 4
	}
	if len(d.B) != 4*dim {
		return r, fmt.Errorf("%w: add record has %d vector bytes, want %d", ErrBad, len(d.B), 4*dim)
	}
	r.Vec = make([]float32, dim)
	for i := range r.Vec {
		r.Vec[i] = math.Float32frombits(d.U32())
	}
	return r, d.Done("add")
}

// AddUID reads the collection uid of a TypeAdd or TypeAddExt body, which
// DecodeAdd needs to know the dimension.
func AddUID(b []byte) (uint64, error) {
	if len(b) < 9 {
		return 0, fmt.Errorf("%w: short add record", ErrBad)
	}
	return le.Uint64(b[1:9]), nil
}

// DecodeDelete decodes a TypeDelete body. REQUIRES: b[0] is TypeDelete.
func DecodeDelete(b []byte) (Delete, error) {
	d := Decoder{B: b[1:]}
	var r Delete
	r.UID = d.U64()
	n := d.U32()
	if uint64(n)*8 != uint64(len(d.B)) {
		return r, fmt.Errorf("%w: bad delete record", ErrBad)
	}
	r.IDs = make([]uint64, n)
	for i := range r.IDs {
		r.IDs[i] = d.U64()
	}
	return r, d.Done("delete")
}

// DecodeQ decodes a TypeQ body. REQUIRES: b[0] is TypeQ.
func DecodeQ(b []byte) (Q, error) {
	d := Decoder{B: b[1:]}
	var r Q
	r.UID = d.U64()
	r.ID = d.U64()
	r.Q = d.F64()
	r.Visits = d.U64()
	r.LastReward = d.F64()
	r.RewardSum = d.F64()
	r.Updated = int64(d.U64())
	return r, d.Done("q")
}
