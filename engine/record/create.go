package record

import "fmt"

// Config is a collection's configuration in the layout that a create
// record and a checkpoint's collection (package ckptfile) share:
//
//	dim u32 | metric u8 | alpha f64 | gamma f64 | qinit f64 |
//	index kind u8 | nlist u32 | pqm u32 | pqbits u8 | train u32
//
// This package gives the fields no meaning: the engine converts them to
// its Config and validates that (a record or checkpoint holding a config
// it refuses is damage).
type Config struct {
	Dim            uint32
	Metric         uint8
	Alpha          float64
	Gamma          float64
	QInit          float64
	IndexKind      uint8
	NList          uint32
	PQM            uint32
	PQBits         uint8
	TrainThreshold uint32
}

// ConfigSize is the size of a Config's layout.
const ConfigSize = 43

// AppendConfig appends c's layout to b.
func AppendConfig(b []byte, c Config) []byte {
	b = le.AppendUint32(b, c.Dim)
	b = append(b, c.Metric)
	b = putF64(b, c.Alpha)
	b = putF64(b, c.Gamma)
	b = putF64(b, c.QInit)
	b = append(b, c.IndexKind)
	b = le.AppendUint32(b, c.NList)
	b = le.AppendUint32(b, c.PQM)
	b = append(b, c.PQBits)
	return le.AppendUint32(b, c.TrainThreshold)
}

// DecodeConfig reads a Config's layout from d; a short read sets d.Err.
func DecodeConfig(d *Decoder) Config {
	var c Config
	c.Dim = d.U32()
	c.Metric = d.U8()
	c.Alpha = d.F64()
	c.Gamma = d.F64()
	c.QInit = d.F64()
	c.IndexKind = d.U8()
	c.NList = d.U32()
	c.PQM = d.U32()
	c.PQBits = d.U8()
	c.TrainThreshold = d.U32()
	return c
}

// Create creates collection UID, Name: TypeCreate, or TypeCreateIndexed
// when it indexes attribute fields from the start (one record, not a
// create and a TypeIndexed, so that a torn log tail cannot keep the
// collection without its fields).
type Create struct {
	UID     uint64
	Name    string
	Config  Config
	Indexed []string // the fields indexed from the start, or none
}

// EncodeCreate returns r's body: TypeCreateIndexed when r.Indexed is not
// empty, else TypeCreate.
// REQUIRES: r.Name fits a u16 length; r.Indexed fits a field list
// (AppendFieldList).
func EncodeCreate(r Create) []byte {
	b := make([]byte, 0, 48+len(r.Name))
	typ := TypeCreate
	if len(r.Indexed) > 0 {
		typ = TypeCreateIndexed
	}
	b = append(b, typ)
	b = le.AppendUint64(b, r.UID)
	b = le.AppendUint16(b, uint16(len(r.Name)))
	b = append(b, r.Name...)
	b = AppendConfig(b, r.Config)
	if typ == TypeCreateIndexed {
		b = AppendFieldList(b, r.Indexed)
	}
	return b
}

// DecodeCreate decodes a TypeCreate or TypeCreateIndexed body. It refuses
// a TypeCreateIndexed whose list is empty (the encoding is canonical) and
// checks nothing else of the values: the config and the names are the
// caller's to check, by its own rules.
// REQUIRES: b[0] is TypeCreate or TypeCreateIndexed.
func DecodeCreate(b []byte) (Create, error) {
	d := Decoder{B: b[1:]}
	var r Create
	r.UID = d.U64()
	r.Name = string(d.Take(int(d.U16())))
	r.Config = DecodeConfig(&d)
	if b[0] == TypeCreateIndexed {
		r.Indexed = DecodeFieldList(&d)
		if !d.Err && len(r.Indexed) == 0 {
			return r, fmt.Errorf("%w: create record with an empty list of indexed fields", ErrBad)
		}
	}
	return r, d.Done("create")
}
