package record

import (
	"fmt"

	"github.com/memrl/memrl/engine/snapfile"
)

// Kinds of a rollback change.
const (
	RollbackDelete  byte = 0 // a live memory the snapshot does not hold: deleted
	RollbackRestore byte = 1 // a live memory the snapshot holds: its state restored
	RollbackRevive  byte = 2 // a ghost the snapshot holds: live again, its state restored
)

// RollbackChange is one memory restored or revived by a rollback.
type RollbackChange struct {
	Kind  byte           // RollbackRestore or RollbackRevive
	Entry snapfile.Entry // the state restored, as the snapshot file holds it
	// RollbackRevive only: the ghost's row, payload and creation time.
	Row     uint32
	PayOff  uint64
	PayLen  uint32
	Created int64 // unix nanoseconds
}

// RollbackBatch is one TypeRollbackBatch record: a rollback's changes, or
// a part of them: the ids deleted, then the memories restored or revived.
type RollbackBatch struct {
	UID     uint64
	Dels    []uint64
	Changes []RollbackChange
}

// EncodeRollbackBatch returns r's body: its deletes first, then its other
// changes, in the order given.
// REQUIRES: every change's Kind is RollbackRestore or RollbackRevive, its
// key and attributes fit their length fields; the count fits a u32.
func EncodeRollbackBatch(r RollbackBatch) []byte {
	n := len(r.Dels) + len(r.Changes)
	b := append(make([]byte, 0, 13+9*len(r.Dels)+80*len(r.Changes)), TypeRollbackBatch)
	b = le.AppendUint64(b, r.UID)
	b = le.AppendUint32(b, uint32(n))
	for _, id := range r.Dels {
		b = append(b, RollbackDelete)
		b = le.AppendUint64(b, id)
	}
	for _, ch := range r.Changes {
		b = append(b, ch.Kind)
		b = snapfile.AppendEntry(b, ch.Entry)
		if ch.Kind == RollbackRevive {
			b = le.AppendUint32(b, ch.Row)
			b = le.AppendUint64(b, ch.PayOff)
			b = le.AppendUint32(b, ch.PayLen)
			b = le.AppendUint64(b, uint64(ch.Created))
		}
	}
	return b
}

// DecodeRollbackBatch decodes a TypeRollbackBatch body; keys and
// attributes are copied (replay keeps the changes past the record's
// buffer). The encoding is canonical: at least one change, deletes before
// the rest. Slices grow as changes are decoded, never to a count read from
// the record. REQUIRES: b[0] is TypeRollbackBatch.
func DecodeRollbackBatch(b []byte) (RollbackBatch, error) {
	d := Decoder{B: b[1:]}
	r := RollbackBatch{UID: d.U64()}
	n := d.U32()
	bad := func(why string) (RollbackBatch, error) {
		return RollbackBatch{}, fmt.Errorf("%w: bad rollback batch record: %s", ErrBad, why)
	}
	if d.Err || n == 0 || uint64(n)*9 > uint64(len(d.B)) {
		return bad("count")
	}
	for i := uint32(0); i < n && !d.Err; i++ {
		kind, id := d.U8(), d.U64()
		switch kind {
		case RollbackDelete:
			if len(r.Changes) > 0 {
				return bad("a delete after a restore")
			}
			r.Dels = append(r.Dels, id)
			continue
		case RollbackRestore, RollbackRevive:
		default:
			return bad(fmt.Sprintf("change of kind %d", kind))
		}
		ch := RollbackChange{Kind: kind, Entry: snapfile.Entry{ID: id}}
		d.B = snapfile.DecodeEntryRest(d.B, &ch.Entry, &d.Err)
		if kind == RollbackRevive {
			ch.Row, ch.PayOff, ch.PayLen, ch.Created = d.U32(), d.U64(), d.U32(), int64(d.U64())
		}
		r.Changes = append(r.Changes, ch)
	}
	return r, d.Done("rollback batch")
}
