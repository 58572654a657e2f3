package record

// Snapshot records that snapshot Seq, Name, of Count memories was taken.
type Snapshot struct {
	UID, Seq uint64
	Created  int64 // unix nanoseconds
	Count    uint64
	Name     string
}

// DelSnapshot records that snapshot Seq was deleted.
type DelSnapshot struct{ UID, Seq uint64 }

// Rollback commits a rollback to snapshot Seq: the N changes of the
// TypeRollbackBatch records logged just before it.
type Rollback struct{ UID, Seq, N uint64 }

// EncodeSnapshot returns r's body.
// REQUIRES: r.Name fits a u16 length (the engine's names are far shorter).
func EncodeSnapshot(r Snapshot) []byte {
	b := make([]byte, 0, 35+len(r.Name))
	b = append(b, TypeSnapshot)
	b = le.AppendUint64(b, r.UID)
	b = le.AppendUint64(b, r.Seq)
	b = le.AppendUint64(b, uint64(r.Created))
	b = le.AppendUint64(b, r.Count)
	b = le.AppendUint16(b, uint16(len(r.Name)))
	return append(b, r.Name...)
}

// DecodeSnapshot decodes a TypeSnapshot body. It does not check the name:
// the caller does, by its own rules. REQUIRES: b[0] is TypeSnapshot.
func DecodeSnapshot(b []byte) (Snapshot, error) {
	d := Decoder{B: b[1:]}
	var r Snapshot
	r.UID, r.Seq, r.Created, r.Count = d.U64(), d.U64(), int64(d.U64()), d.U64()
	r.Name = string(d.Take(int(d.U16())))
	return r, d.Done("snapshot")
}

// EncodeDelSnapshot returns r's body.
func EncodeDelSnapshot(r DelSnapshot) []byte {
	b := append(make([]byte, 0, 17), TypeDelSnapshot)
	b = le.AppendUint64(b, r.UID)
	return le.AppendUint64(b, r.Seq)
}

// DecodeDelSnapshot decodes a TypeDelSnapshot body.
// REQUIRES: b[0] is TypeDelSnapshot.
func DecodeDelSnapshot(b []byte) (DelSnapshot, error) {
	d := Decoder{B: b[1:]}
	r := DelSnapshot{UID: d.U64(), Seq: d.U64()}
	return r, d.Done("delsnapshot")
}

// EncodeRollback returns r's body.
func EncodeRollback(r Rollback) []byte {
	b := append(make([]byte, 0, 25), TypeRollback)
	b = le.AppendUint64(b, r.UID)
	b = le.AppendUint64(b, r.Seq)
	return le.AppendUint64(b, r.N)
}

// DecodeRollback decodes a TypeRollback body.
// REQUIRES: b[0] is TypeRollback.
func DecodeRollback(b []byte) (Rollback, error) {
	d := Decoder{B: b[1:]}
	r := Rollback{UID: d.U64(), Seq: d.U64(), N: d.U64()}
	return r, d.Done("rollback")
}
