package record

import "fmt"

// Remap is a compaction's remap marker (TypeRemap): records of collection
// UID logged after it refer to generation Gen's rows and payload offsets,
// those before it to the previous generation's. Gen's files hold NRows
// rows and PaySize payload bytes at the marker, and its row map file
// (package engine/remapfile) has the xxhash64 MapSum.
type Remap struct {
	UID, Gen uint64
	NRows    uint32
	PaySize  uint64
	MapSum   uint64
}

// RemapSize is the size of a TypeRemap body.
const RemapSize = 37

// EncodeRemap returns r's body.
func EncodeRemap(r Remap) []byte {
	b := make([]byte, 0, RemapSize)
	b = append(b, TypeRemap)
	b = le.AppendUint64(b, r.UID)
	b = le.AppendUint64(b, r.Gen)
	b = le.AppendUint32(b, r.NRows)
	b = le.AppendUint64(b, r.PaySize)
	return le.AppendUint64(b, r.MapSum)
}

// DecodeRemap decodes a TypeRemap body; one of another length, or not
// starting with TypeRemap, is refused (ErrBad).
func DecodeRemap(b []byte) (Remap, error) {
	if len(b) != RemapSize || b[0] != TypeRemap {
		return Remap{}, fmt.Errorf("%w: remap: %d bytes, want %d", ErrBad, len(b), RemapSize)
	}
	d := Decoder{B: b[1:]}
	r := Remap{UID: d.U64(), Gen: d.U64(), NRows: d.U32(), PaySize: d.U64(), MapSum: d.U64()}
	return r, d.Done("remap")
}
