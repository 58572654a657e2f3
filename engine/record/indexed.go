package record

// Indexed sets a collection's indexed attribute fields: the whole list
// after the change, not the change.
type Indexed struct {
	UID    uint64
	Fields []string
}

// EncodeIndexed returns r's body.
// REQUIRES: r.Fields fits a field list (AppendFieldList).
func EncodeIndexed(r Indexed) []byte {
	b := make([]byte, 0, 10+len(r.Fields)*16)
	b = append(b, TypeIndexed)
	b = le.AppendUint64(b, r.UID)
	return AppendFieldList(b, r.Fields)
}

// DecodeIndexed decodes a TypeIndexed body. It checks the layout only:
// the names (valid, sorted, unique) are the caller's to check, by its own
// rules. REQUIRES: b[0] is TypeIndexed.
func DecodeIndexed(b []byte) (Indexed, error) {
	d := Decoder{B: b[1:]}
	var r Indexed
	r.UID = d.U64()
	r.Fields = DecodeFieldList(&d)
	return r, d.Done("indexed-fields")
}

// AppendFieldList appends fields as n u8 | n × (name u8-len bytes), the
// layout that TypeIndexed, TypeCreateIndexed and a checkpoint's collection
// (package ckptfile, version 5 on) share.
// REQUIRES: at most 255 names, each at most 255 bytes (the engine allows
// far fewer).
func AppendFieldList(b []byte, fields []string) []byte {
	b = append(b, uint8(len(fields)))
	for _, f := range fields {
		b = append(b, uint8(len(f)))
		b = append(b, f...)
	}
	return b
}

// DecodeFieldList reads a field list (AppendFieldList) from d; a short
// read sets d.Err. The list grows as names are read, never to the count
// read first.
func DecodeFieldList(d *Decoder) []string {
	n := int(d.U8())
	var fields []string
	for i := 0; i < n && !d.Err; i++ {
		fields = append(fields, string(d.Take(int(d.U8()))))
	}
	return fields
}
