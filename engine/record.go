package engine

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/memrl/memrl/engine/record"
)

// Log records. The WAL frames and checksums each record; package record
// defines the bodies: every type number, and the codecs of the bodies that
// need nothing of the engine. This file keeps the create record (its
// config is the engine's), the engine's decoder, and the short names the
// engine's code uses for the package's types and codecs.
//
//	recCreate   uid u64 | name u16-len bytes | config (encodeConfig)
//
// 10 and 11 (indexed attribute fields, and a create with them) are in
// filter_index.go; 17 (prune policies) in prune_policy_codec.go; 18
// (rollback batches) in snapshot_record.go; 19 to 21 in group.go; 22 in
// remap.go; 23 in replace.go.
const (
	recCreate     = record.TypeCreate
	recDrop       = record.TypeDrop
	recAdd        = record.TypeAdd
	recDelete     = record.TypeDelete
	recQ          = record.TypeQ
	recAddExt     = record.TypeAddExt
	recSetAttrs   = record.TypeSetAttrs
	recSetPayload = record.TypeSetPayload
	recExpire     = record.TypeExpire
)

// errBadRecord wraps every decoding failure; a record that the WAL's
// checksum accepted but the engine cannot decode means a bug or a log from
// a newer version. It is record.ErrBad, so errors.Is matches either.
var errBadRecord = record.ErrBad

type createRec struct {
	uid  uint64
	name string
	cfg  Config
}

type (
	addRec        = record.Add
	deleteRec     = record.Delete
	qRec          = record.Q
	setAttrsRec   = record.SetAttrs
	setPayloadRec = record.SetPayload
	expireRec     = record.Expire
)

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

func encodeDrop(uid uint64) []byte                 { return record.EncodeDrop(uid) }
func encodeAdd(r addRec) []byte                    { return record.EncodeAdd(r) }
func encodeDelete(r deleteRec) []byte              { return record.EncodeDelete(r) }
func encodeQ(r qRec) []byte                        { return record.EncodeQ(r) }
func appendQ(b []byte, r qRec) []byte              { return record.AppendQ(b, r) }
func encodeSetAttrs(r setAttrsRec) []byte          { return record.EncodeSetAttrs(r) }
func encodeSetPayload(r setPayloadRec) []byte      { return record.EncodeSetPayload(r) }
func encodeExpire(r expireRec) []byte              { return record.EncodeExpire(r) }
func decodeDrop(b []byte) (uint64, error)          { return record.DecodeDrop(b) }
func decodeAdd(b []byte, dim int) (addRec, error)  { return record.DecodeAdd(b, dim) }
func addRecUID(b []byte) (uint64, error)           { return record.AddUID(b) }
func decodeDelete(b []byte) (deleteRec, error)     { return record.DecodeDelete(b) }
func decodeQ(b []byte) (qRec, error)               { return record.DecodeQ(b) }
func decodeSetAttrs(b []byte) (setAttrsRec, error) { return record.DecodeSetAttrs(b) }
func decodeSetPayload(b []byte) (setPayloadRec, error) {
	return record.DecodeSetPayload(b)
}
func decodeExpire(b []byte) (expireRec, error) { return record.DecodeExpire(b) }

// qRecSize is the size of a recQ body.
const qRecSize = record.QSize

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
