package engine

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/memrl/memrl/engine/record"
)

// Log records. The WAL frames and checksums each record; package record
// defines the bodies: every type number, and every body's codec. This file
// keeps the engine's decoder, the checks of a create record's values (its
// config and indexed fields), and the short names the engine's code uses
// for the package's types and codecs. The names for 10 and 11 (indexed
// attribute fields, and a create with them) are in filter_index.go; 17
// (prune policies) in prune_policy_codec.go; 18 (rollback batches) in
// snapshot_record.go; 19 to 21 in group.go; 22 in remap.go; 23 in
// replace.go.
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
	return record.EncodeCreate(record.Create{UID: r.uid, Name: r.name, Config: recConfig(r.cfg), Indexed: r.cfg.Indexed})
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

// decoder reads little-endian fields and remembers the first short read
// (record.Decoder: one decoder for every body and section the engine
// decodes).
type decoder = record.Decoder

// decodeCreate decodes a create record (record.DecodeCreate) and checks
// what package record leaves to the engine: the indexed fields' names and
// the config.
func decodeCreate(b []byte) (createRec, error) {
	x, err := record.DecodeCreate(b)
	r := createRec{uid: x.UID, name: x.Name, cfg: configOf(x.Config)}
	r.cfg.Indexed = x.Indexed
	if err != nil {
		return r, err
	}
	if err := checkFieldList(r.cfg.Indexed); err != nil {
		return r, err
	}
	// Create logs only validated configs; replaying an invalid one (a
	// zero dimension divides by a zero row size) would be unsafe.
	if err := r.cfg.Validate(); err != nil {
		return r, fmt.Errorf("%w: create record: %v", errBadRecord, err)
	}
	return r, nil
}
