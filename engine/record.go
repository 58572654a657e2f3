package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Log records. The WAL frames and checksums each record; this file defines
// the record bodies. Every record starts with a one-byte type; a change of a
// body's layout gets a new type number, so old logs stay readable. All
// integers are little-endian.
//
//	recCreate   uid u64 | name u16-len bytes | config (encodeConfig)
//	recDrop     uid u64
//	recAdd      uid u64 | id u64 | row u32 | payOff u64 | created i64 | q f64 | payload u32-len bytes | vector dim×f32
//	recDelete   uid u64 | n u32 | n × id u64
//	recQ        uid u64 | id u64 | q f64 | visits u64 | lastReward f64 | rewardSum f64 | updated i64
//
// Types 6 to 9 (attributes, keys, expiry, payload updates) are in
// record_ext.go; 10 and 11 (indexed attribute fields, and a create with
// them) in filter_index.go; 17 (prune policies) in prune_policy_codec.go.
//
// Records log results, not operations: recQ carries the new Q and counters,
// recAdd the row and payload offset chosen, so that replaying a record twice
// (once from a checkpoint's state, once from the log) changes nothing.
const (
	recCreate byte = 1
	recDrop   byte = 2
	recAdd    byte = 3
	recDelete byte = 4
	recQ      byte = 5
)

// errBadRecord wraps every decoding failure; a record that the WAL's
// checksum accepted but this file cannot decode means a bug or a log from a
// newer version.
var errBadRecord = errors.New("engine: malformed log record")

type createRec struct {
	uid  uint64
	name string
	cfg  Config
}

type addRec struct {
	uid, id uint64
	row     uint32
	payOff  uint64
	created int64
	q       float64
	payload []byte
	vec     []float32
	// Logged in a recAddExt record when any is set (record_ext.go).
	attrs   []byte // compact JSON object, or nil
	key     string // external key, or ""
	expires int64  // unix nanoseconds, or 0 for never
}

type deleteRec struct {
	uid uint64
	ids []uint64
}

type qRec struct {
	uid, id    uint64
	q          float64
	visits     uint64
	lastReward float64
	rewardSum  float64
	updated    int64
}

var le = binary.LittleEndian

func putF64(b []byte, f float64) []byte { return le.AppendUint64(b, math.Float64bits(f)) }

func encodeCreate(r createRec) []byte {
	b := make([]byte, 0, 48+len(r.name))
	typ := recCreate
	if len(r.cfg.Indexed) > 0 {
		typ = recCreateIndexed // filter_index.go
	}
	b = append(b, typ)
	b = le.AppendUint64(b, r.uid)
	b = le.AppendUint16(b, uint16(len(r.name)))
	b = append(b, r.name...)
	b = encodeConfig(b, r.cfg)
	if typ == recCreateIndexed {
		b = appendFieldList(b, r.cfg.Indexed)
	}
	return b
}

func encodeDrop(uid uint64) []byte {
	return le.AppendUint64([]byte{recDrop}, uid)
}

func encodeAdd(r addRec) []byte {
	if r.hasExt() {
		return encodeAddExt(r)
	}
	b := make([]byte, 0, 53+len(r.payload)+4*len(r.vec))
	b = append(b, recAdd)
	b = le.AppendUint64(b, r.uid)
	b = le.AppendUint64(b, r.id)
	b = le.AppendUint32(b, r.row)
	b = le.AppendUint64(b, r.payOff)
	b = le.AppendUint64(b, uint64(r.created))
	b = putF64(b, r.q)
	b = le.AppendUint32(b, uint32(len(r.payload)))
	b = append(b, r.payload...)
	for _, f := range r.vec {
		b = le.AppendUint32(b, math.Float32bits(f))
	}
	return b
}

func encodeDelete(r deleteRec) []byte {
	b := make([]byte, 0, 13+8*len(r.ids))
	b = append(b, recDelete)
	b = le.AppendUint64(b, r.uid)
	b = le.AppendUint32(b, uint32(len(r.ids)))
	for _, id := range r.ids {
		b = le.AppendUint64(b, id)
	}
	return b
}

// qRecSize is the size of a recQ body.
const qRecSize = 57

func encodeQ(r qRec) []byte { return appendQ(make([]byte, 0, qRecSize), r) }

// appendQ appends r's body to b; the reward path encodes into a stack
// buffer with it (the log copies the record).
func appendQ(b []byte, r qRec) []byte {
	b = append(b, recQ)
	b = le.AppendUint64(b, r.uid)
	b = le.AppendUint64(b, r.id)
	b = putF64(b, r.q)
	b = le.AppendUint64(b, r.visits)
	b = putF64(b, r.lastReward)
	b = putF64(b, r.rewardSum)
	b = le.AppendUint64(b, uint64(r.updated))
	return b
}

// decoder reads little-endian fields and remembers the first short read.
type decoder struct {
	b   []byte
	err bool
}

// take returns the next n bytes. On a short read it sets d.err and
// returns 8 zero bytes (or fewer), enough for the fixed-size readers
// below: never a buffer of the length asked for, which may be a
// length field read from damaged input (up to 4 GiB).
func (d *decoder) take(n int) []byte {
	if d.err || n < 0 || len(d.b) < n {
		d.err = true
		return make([]byte, min(max(n, 0), 8))
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}
func (d *decoder) u8() byte     { return d.take(1)[0] }
func (d *decoder) u16() uint16  { return le.Uint16(d.take(2)) }
func (d *decoder) u32() uint32  { return le.Uint32(d.take(4)) }
func (d *decoder) u64() uint64  { return le.Uint64(d.take(8)) }
func (d *decoder) f64() float64 { return math.Float64frombits(d.u64()) }

// done reports a short or over-long body as errBadRecord.
func (d *decoder) done(kind string) error {
	if d.err || len(d.b) != 0 {
		return fmt.Errorf("%w: bad %s record", errBadRecord, kind)
	}
	return nil
}

func decodeCreate(b []byte) (createRec, error) {
	d := decoder{b: b[1:]}
	var r createRec
	r.uid = d.u64()
	r.name = string(d.take(int(d.u16())))
	r.cfg = decodeConfig(&d)
	if b[0] == recCreateIndexed {
		r.cfg.Indexed = decodeFieldList(&d)
		if !d.err && len(r.cfg.Indexed) == 0 {
			return r, fmt.Errorf("%w: create record with an empty list of indexed fields", errBadRecord)
		}
		if err := checkFieldList(r.cfg.Indexed); !d.err && err != nil {
			return r, err
		}
	}
	if err := d.done("create"); err != nil {
		return r, err
	}
	// Create logs only validated configs; replaying an invalid one (a
	// zero dimension divides by a zero row size) would be unsafe.
	if err := r.cfg.Validate(); err != nil {
		return r, fmt.Errorf("%w: create record: %v", errBadRecord, err)
	}
	return r, nil
}

func decodeDrop(b []byte) (uint64, error) {
	d := decoder{b: b[1:]}
	uid := d.u64()
	return uid, d.done("drop")
}

// decodeAdd decodes a recAdd or recAddExt body (record_ext.go) whose
// vector has dim components (dim < 0: whatever the body holds, for
// inspection without the collection's config). The payload and attributes
// alias b.
// REQUIRES: b[0] is recAdd or recAddExt.
func decodeAdd(b []byte, dim int) (addRec, error) {
	d := decoder{b: b[1:]}
	ext := b[0] == recAddExt // else recAdd
	var r addRec
	r.uid = d.u64()
	r.id = d.u64()
	r.row = d.u32()
	r.payOff = d.u64()
	r.created = int64(d.u64())
	r.q = d.f64()
	if ext {
		r.expires = int64(d.u64())
		r.key = string(d.take(int(d.u16())))
		if n := d.u32(); n > 0 {
			r.attrs = d.take(int(n))
		}
	}
	r.payload = d.take(int(d.u32()))
	if d.err {
		return r, fmt.Errorf("%w: bad add record", errBadRecord)
	}
	if ext && !r.hasExt() {
		// Canonical encoding: such an add is logged as recAdd.
		return r, fmt.Errorf("%w: extended add record without attributes, key or expiry", errBadRecord)
	}
	if dim < 0 && len(d.b)%4 == 0 {
		dim = len(d.b) / 4
	}
	if len(d.b) != 4*dim {
		return r, fmt.Errorf("%w: add record has %d vector bytes, want %d", errBadRecord, len(d.b), 4*dim)
	}
	r.vec = make([]float32, dim)
	for i := range r.vec {
		r.vec[i] = math.Float32frombits(d.u32())
	}
	return r, d.done("add")
}

// addRecUID reads the collection uid of a recAdd or recAddExt body, which decodeAdd
// needs to know the dimension.
func addRecUID(b []byte) (uint64, error) {
	if len(b) < 9 {
		return 0, fmt.Errorf("%w: short add record", errBadRecord)
	}
	return le.Uint64(b[1:9]), nil
}

func decodeDelete(b []byte) (deleteRec, error) {
	d := decoder{b: b[1:]}
	var r deleteRec
	r.uid = d.u64()
	n := d.u32()
	if uint64(n)*8 != uint64(len(d.b)) {
		return r, fmt.Errorf("%w: bad delete record", errBadRecord)
	}
	r.ids = make([]uint64, n)
	for i := range r.ids {
		r.ids[i] = d.u64()
	}
	return r, d.done("delete")
}

func decodeQ(b []byte) (qRec, error) {
	d := decoder{b: b[1:]}
	var r qRec
	r.uid = d.u64()
	r.id = d.u64()
	r.q = d.f64()
	r.visits = d.u64()
	r.lastReward = d.f64()
	r.rewardSum = d.f64()
	r.updated = int64(d.u64())
	return r, d.done("q")
}
