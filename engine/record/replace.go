package record

import (
	"fmt"
	"math"
)

// The flags of a TypeReplace body; any other bit is a malformed record.
const (
	ReplaceAttrs   byte = 1 << 0 // the record carries new attributes (empty: none)
	ReplacePayload byte = 1 << 1 // the record carries a new payload
	replaceFlags        = ReplaceAttrs | ReplacePayload
)

// Replace gives memory ID of collection UID a new vector at Row (a new
// row of the vector file), and, as Flags say, new attributes and a new
// payload at PayOff.
type Replace struct {
	UID, ID uint64
	Row     uint32
	Flags   byte
	Attrs   []byte // compact JSON, or nil (Flags&ReplaceAttrs)
	PayOff  uint64 // Flags&ReplacePayload
	Payload []byte
	Vec     []float32
}

// EncodeReplace returns r's body. Attrs and Payload are written only if
// Flags name them. REQUIRES: Flags has no other bit; the lengths fit a u32.
func EncodeReplace(r Replace) []byte {
	b := make([]byte, 0, 34+len(r.Attrs)+len(r.Payload)+4*len(r.Vec))
	b = append(b, TypeReplace)
	b = le.AppendUint64(b, r.UID)
	b = le.AppendUint64(b, r.ID)
	b = le.AppendUint32(b, r.Row)
	b = append(b, r.Flags)
	if r.Flags&ReplaceAttrs != 0 {
		b = le.AppendUint32(b, uint32(len(r.Attrs)))
		b = append(b, r.Attrs...)
	}
	if r.Flags&ReplacePayload != 0 {
		b = le.AppendUint64(b, r.PayOff)
		b = le.AppendUint32(b, uint32(len(r.Payload)))
		b = append(b, r.Payload...)
	}
	for _, f := range r.Vec {
		b = le.AppendUint32(b, math.Float32bits(f))
	}
	return b
}

// DecodeReplace decodes a TypeReplace body whose vector has dim
// components (dim < 0: whatever the body holds, for inspection). The
// attributes and payload alias b; empty attributes decode as nil. It
// refuses unknown flags and a vector of another size (or none).
// REQUIRES: b[0] is TypeReplace.
func DecodeReplace(b []byte, dim int) (Replace, error) {
	d := Decoder{B: b[1:]}
	var r Replace
	r.UID = d.U64()
	r.ID = d.U64()
	r.Row = d.U32()
	r.Flags = d.U8()
	if r.Flags&^replaceFlags != 0 {
		return r, fmt.Errorf("%w: replace record with unknown flags %#x", ErrBad, r.Flags)
	}
	if r.Flags&ReplaceAttrs != 0 {
		if n := d.U32(); n > 0 {
			r.Attrs = d.Take(int(n))
		}
	}
	if r.Flags&ReplacePayload != 0 {
		r.PayOff = d.U64()
		r.Payload = d.Take(int(d.U32()))
	}
	if d.Err {
		return r, fmt.Errorf("%w: bad replace record", ErrBad)
	}
	if dim < 0 && len(d.B)%4 == 0 {
		dim = len(d.B) / 4
	}
	if dim == 0 || len(d.B) != 4*dim {
		return r, fmt.Errorf("%w: replace record has %d vector bytes, want %d", ErrBad, len(d.B), 4*dim)
	}
	r.Vec = make([]float32, dim)
	for i := range r.Vec {
		r.Vec[i] = math.Float32frombits(d.U32())
	}
	return r, d.Done("replace")
}
