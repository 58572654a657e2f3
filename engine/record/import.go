package record

import "fmt"

// ImportVersion is the layout of a TypeImport body, written after its
// type byte; a reader refuses any other.
const ImportVersion = 1

// EncodeImport returns the body that logs collection name, of folder
// uid, as imported. REQUIRES: name fits a u16 length.
func EncodeImport(uid uint64, name string) []byte {
	b := []byte{TypeImport, ImportVersion}
	b = le.AppendUint64(b, uid)
	b = le.AppendUint16(b, uint16(len(name)))
	return append(b, name...)
}

// DecodeImport decodes a TypeImport body; one of another version is
// refused. It does not check the name: the caller does, by its own rules.
// REQUIRES: b[0] is TypeImport.
func DecodeImport(b []byte) (uid uint64, name string, err error) {
	d := Decoder{B: b[1:]}
	if v := d.U8(); v != ImportVersion && !d.Err {
		return 0, "", fmt.Errorf("%w: import record version %d", ErrBad, v)
	}
	uid = d.U64()
	name = string(d.Take(int(d.U16())))
	return uid, name, d.Done("import")
}
