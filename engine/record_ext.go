package engine

import "math"

// Log records of the data model's additions: attributes, keys, expiry and
// in-place payload updates. Like every record they log results (the row,
// offset and absolute expiry chosen), so replaying one twice changes
// nothing. All integers are little-endian.
//
//	recAddExt      uid u64 | id u64 | row u32 | payOff u64 | created i64 | q f64 |
//	               expires i64 | key u16-len bytes | attrs u32-len bytes |
//	               payload u32-len bytes | vector dim×f32
//	recSetAttrs    uid u64 | id u64 | attrs u32-len bytes          (empty: none)
//	recSetPayload  uid u64 | id u64 | payOff u64 | payload u32-len bytes
//	recExpire      uid u64 | id u64 | expires i64                  (0: never)
//
// recAddExt is an add of a memory with attributes, a key or an expiry; an
// add with none of them is still logged as recAdd, whose layout never
// changes. expires is absolute (unix nanoseconds), never a TTL, so that
// replay at any later time reaches the same state.
const (
	recAddExt     byte = 6
	recSetAttrs   byte = 7
	recSetPayload byte = 8
	recExpire     byte = 9
)

// setAttrsRec replaces a memory's attributes.
type setAttrsRec struct {
	uid, id uint64
	attrs   []byte // compact JSON object; empty removes them
}

// setPayloadRec gives a memory a new payload, written at payOff of the
// payload file (the old bytes stay there as garbage until compaction).
type setPayloadRec struct {
	uid, id uint64
	payOff  uint64
	payload []byte
}

// expireRec sets (or, with 0, removes) a memory's expiry.
type expireRec struct {
	uid, id uint64
	expires int64
}

// hasExt reports whether r must be logged as recAddExt.
func (r addRec) hasExt() bool { return len(r.attrs) > 0 || r.key != "" || r.expires != 0 }

func encodeAddExt(r addRec) []byte {
	b := make([]byte, 0, 67+len(r.key)+len(r.attrs)+len(r.payload)+4*len(r.vec))
	b = append(b, recAddExt)
	b = le.AppendUint64(b, r.uid)
	b = le.AppendUint64(b, r.id)
	b = le.AppendUint32(b, r.row)
	b = le.AppendUint64(b, r.payOff)
	b = le.AppendUint64(b, uint64(r.created))
	b = putF64(b, r.q)
	b = le.AppendUint64(b, uint64(r.expires))
	b = le.AppendUint16(b, uint16(len(r.key)))
	b = append(b, r.key...)
	b = le.AppendUint32(b, uint32(len(r.attrs)))
	b = append(b, r.attrs...)
	b = le.AppendUint32(b, uint32(len(r.payload)))
	b = append(b, r.payload...)
	for _, f := range r.vec {
		b = le.AppendUint32(b, math.Float32bits(f))
	}
	return b
}

func encodeSetAttrs(r setAttrsRec) []byte {
	b := make([]byte, 0, 21+len(r.attrs))
	b = append(b, recSetAttrs)
	b = le.AppendUint64(b, r.uid)
	b = le.AppendUint64(b, r.id)
	b = le.AppendUint32(b, uint32(len(r.attrs)))
	return append(b, r.attrs...)
}

func decodeSetAttrs(b []byte) (setAttrsRec, error) {
	d := decoder{b: b[1:]}
	var r setAttrsRec
	r.uid = d.u64()
	r.id = d.u64()
	if n := d.u32(); n > 0 {
		r.attrs = d.take(int(n))
	}
	return r, d.done("set-attributes")
}

func encodeSetPayload(r setPayloadRec) []byte {
	b := make([]byte, 0, 29+len(r.payload))
	b = append(b, recSetPayload)
	b = le.AppendUint64(b, r.uid)
	b = le.AppendUint64(b, r.id)
	b = le.AppendUint64(b, r.payOff)
	b = le.AppendUint32(b, uint32(len(r.payload)))
	return append(b, r.payload...)
}

func decodeSetPayload(b []byte) (setPayloadRec, error) {
	d := decoder{b: b[1:]}
	var r setPayloadRec
	r.uid = d.u64()
	r.id = d.u64()
	r.payOff = d.u64()
	r.payload = d.take(int(d.u32()))
	return r, d.done("set-payload")
}

func encodeExpire(r expireRec) []byte {
	b := make([]byte, 0, 25)
	b = append(b, recExpire)
	b = le.AppendUint64(b, r.uid)
	b = le.AppendUint64(b, r.id)
	return le.AppendUint64(b, uint64(r.expires))
}

func decodeExpire(b []byte) (expireRec, error) {
	d := decoder{b: b[1:]}
	var r expireRec
	r.uid = d.u64()
	r.id = d.u64()
	r.expires = int64(d.u64())
	return r, d.done("expire")
}
