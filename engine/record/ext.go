package record

import "math"

// SetAttrs replaces a memory's attributes.
type SetAttrs struct {
	UID, ID uint64
	Attrs   []byte // compact JSON object; empty removes them
}

// SetPayload gives a memory a new payload, written at PayOff of the
// payload file (the old bytes stay there as garbage until compaction).
type SetPayload struct {
	UID, ID uint64
	PayOff  uint64
	Payload []byte
}

// Expire sets (or, with 0, removes) a memory's expiry.
type Expire struct {
	UID, ID uint64
	Expires int64 // unix nanoseconds, absolute; 0: never
}

// HasExt reports whether r must be logged as TypeAddExt.
func (r Add) HasExt() bool { return len(r.Attrs) > 0 || r.Key != "" || r.Expires != 0 }

func encodeAddExt(r Add) []byte {
	b := make([]byte, 0, 67+len(r.Key)+len(r.Attrs)+len(r.Payload)+4*len(r.Vec))
	b = append(b, TypeAddExt)
	b = le.AppendUint64(b, r.UID)
	b = le.AppendUint64(b, r.ID)
	b = le.AppendUint32(b, r.Row)
	b = le.AppendUint64(b, r.PayOff)
	b = le.AppendUint64(b, uint64(r.Created))
	b = putF64(b, r.Q)
	b = le.AppendUint64(b, uint64(r.Expires))
	b = le.AppendUint16(b, uint16(len(r.Key)))
	b = append(b, r.Key...)
	b = le.AppendUint32(b, uint32(len(r.Attrs)))
	b = append(b, r.Attrs...)
	b = le.AppendUint32(b, uint32(len(r.Payload)))
	b = append(b, r.Payload...)
	for _, f := range r.Vec {
		b = le.AppendUint32(b, math.Float32bits(f))
	}
	return b
}

// EncodeSetAttrs returns r's body.
func EncodeSetAttrs(r SetAttrs) []byte {
	b := make([]byte, 0, 21+len(r.Attrs))
	b = append(b, TypeSetAttrs)
	b = le.AppendUint64(b, r.UID)
	b = le.AppendUint64(b, r.ID)
	b = le.AppendUint32(b, uint32(len(r.Attrs)))
	return append(b, r.Attrs...)
}

// DecodeSetAttrs decodes a TypeSetAttrs body; the attributes alias b.
// REQUIRES: b[0] is TypeSetAttrs.
func DecodeSetAttrs(b []byte) (SetAttrs, error) {
	d := Decoder{B: b[1:]}
	var r SetAttrs
	r.UID = d.U64()
	r.ID = d.U64()
	if n := d.U32(); n > 0 {
		r.Attrs = d.Take(int(n))
	}
	return r, d.Done("set-attributes")
}

// EncodeSetPayload returns r's body.
func EncodeSetPayload(r SetPayload) []byte {
	b := make([]byte, 0, 29+len(r.Payload))
	b = append(b, TypeSetPayload)
	b = le.AppendUint64(b, r.UID)
	b = le.AppendUint64(b, r.ID)
	b = le.AppendUint64(b, r.PayOff)
	b = le.AppendUint32(b, uint32(len(r.Payload)))
	return append(b, r.Payload...)
}

// DecodeSetPayload decodes a TypeSetPayload body; the payload aliases b.
// REQUIRES: b[0] is TypeSetPayload.
func DecodeSetPayload(b []byte) (SetPayload, error) {
	d := Decoder{B: b[1:]}
	var r SetPayload
	r.UID = d.U64()
	r.ID = d.U64()
	r.PayOff = d.U64()
	r.Payload = d.Take(int(d.U32()))
	return r, d.Done("set-payload")
}

// EncodeExpire returns r's body.
func EncodeExpire(r Expire) []byte {
	b := make([]byte, 0, 25)
	b = append(b, TypeExpire)
	b = le.AppendUint64(b, r.UID)
	b = le.AppendUint64(b, r.ID)
	return le.AppendUint64(b, uint64(r.Expires))
}

// DecodeExpire decodes a TypeExpire body. REQUIRES: b[0] is TypeExpire.
func DecodeExpire(b []byte) (Expire, error) {
	d := Decoder{B: b[1:]}
	var r Expire
	r.UID = d.U64()
	r.ID = d.U64()
	r.Expires = int64(d.U64())
	return r, d.Done("expire")
}
