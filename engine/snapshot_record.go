package engine

import (
	"fmt"

	"github.com/memrl/memrl/engine/record"
)

// Log records of snapshots and rollback (snapshot.go, rollback.go). Like
// every record they log results: a rollback is logged as the changes it
// made, never as "roll back to S", so replay needs no snapshot file and
// converges over a fuzzy checkpoint as the other records do.
//
//	recSnapshot       uid u64 | seq u64 | created i64 | count u64 | name u16-len bytes
//	recDelSnapshot    uid u64 | seq u64
//	recRollbackBatch  uid u64 | n u32 | n × change
//	recRollback       uid u64 | seq u64 | n u64       (commits the n changes of the batches before it)
//
//	change: kind u8 | id u64 | then, for rbRestore and rbRevive (deletes come first):
//	        q f64 | visits u64 | lastReward f64 | rewardSum f64 | updated i64 |
//	        expires i64 | key u16-len bytes | attrs u32-len bytes |
//	        and for rbRevive only: row u32 | payOff u64 | payLen u32 | created i64
//
// A rollback is logged with one wal.Log.EnqueueBatch: its batches, then
// recRollback. Replay keeps the batches aside and applies them only at
// recRollback, so a log torn inside a rollback replays none of it. (One
// EnqueueBatch also keeps a checkpoint's log position from falling inside
// a rollback.)
//
// The bodies of recSnapshot, recDelSnapshot and recRollback are package
// record's; recRollbackBatch's is defined here, as its changes carry the
// engine's memory record.
const (
	recSnapshot      = record.TypeSnapshot
	recDelSnapshot   = record.TypeDelSnapshot
	recRollback      = record.TypeRollback
	recRollbackBatch = record.TypeRollbackBatch
)

// Kinds of rollback change.
const (
	rbDelete  byte = 0 // a live memory the snapshot does not hold: deleted
	rbRestore byte = 1 // a live memory the snapshot holds: its state restored
	rbRevive  byte = 2 // a ghost the snapshot holds: live again, its state restored
)

type (
	snapshotRec    = record.Snapshot
	delSnapshotRec = record.DelSnapshot
	rollbackRec    = record.Rollback
)

// rbChange is one memory restored or revived by a rollback.
type rbChange struct {
	kind byte      // rbRestore or rbRevive
	e    snapEntry // the state restored
	m    memory    // rbRevive: the ghost's record (its ext is rebuilt from e)
}

// rbBatch is a rollback's changes, or a part of them: the ids deleted
// (ascending), and the memories restored or revived (ascending ids).
type rbBatch struct {
	dels    []uint64
	changes []rbChange
}

func (b rbBatch) len() int { return len(b.dels) + len(b.changes) }

func encodeSnapshot(r snapshotRec) []byte { return record.EncodeSnapshot(r) }

// decodeSnapshot decodes a recSnapshot body and checks its name.
func decodeSnapshot(b []byte) (snapshotRec, error) {
	r, err := record.DecodeSnapshot(b)
	if err != nil {
		return r, err
	}
	if err := checkSnapshotName(r.Name); err != nil {
		return r, fmt.Errorf("%w: snapshot record: %v", errBadRecord, err)
	}
	return r, nil
}

func encodeDelSnapshot(r delSnapshotRec) []byte { return record.EncodeDelSnapshot(r) }
func decodeDelSnapshot(b []byte) (delSnapshotRec, error) {
	return record.DecodeDelSnapshot(b)
}
func encodeRollback(r rollbackRec) []byte { return record.EncodeRollback(r) }
func decodeRollback(b []byte) (rollbackRec, error) {
	return record.DecodeRollback(b)
}

// rbBatchBytes bounds a recRollbackBatch body (far below
// wal.MaxRecordSize, so that no change, whatever its attributes, makes a
// record too large). A variable so that crash tests can make batches tiny.
var rbBatchBytes = 1 << 20

// encodeRollbackBatches encodes a rollback's changes as recRollbackBatch
// records of at most about rbBatchBytes each (deletes first, as in each
// record).
func encodeRollbackBatches(uid uint64, rb rbBatch) [][]byte {
	var out [][]byte
	dels, changes := rb.dels, rb.changes
	for len(dels) > 0 || len(changes) > 0 {
		var part rbBatch
		size := 13
		for len(dels) > 0 && (part.len() == 0 || size < rbBatchBytes) {
			part.dels, dels = append(part.dels, dels[0]), dels[1:]
			size += 9
		}
		for len(changes) > 0 && (part.len() == 0 || size < rbBatchBytes) {
			part.changes, changes = append(part.changes, changes[0]), changes[1:]
			size += 71 + len(part.changes[len(part.changes)-1].e.Key) + len(part.changes[len(part.changes)-1].e.Attrs)
		}
		out = append(out, encodeRollbackBatch(uid, part))
	}
	return out
}

// encodeRollbackBatch encodes rb as one recRollbackBatch body.
func encodeRollbackBatch(uid uint64, rb rbBatch) []byte {
	b := append(make([]byte, 0, 13+9*len(rb.dels)+80*len(rb.changes)), recRollbackBatch)
	b = le.AppendUint64(b, uid)
	b = le.AppendUint32(b, uint32(rb.len()))
	for _, id := range rb.dels {
		b = append(b, rbDelete)
		b = le.AppendUint64(b, id)
	}
	for _, ch := range rb.changes {
		b = appendRBChange(b, ch)
	}
	return b
}

func appendRBChange(b []byte, ch rbChange) []byte {
	b = append(b, ch.kind)
	b = appendSnapEntry(b, ch.e)
	if ch.kind == rbRevive {
		b = le.AppendUint32(b, ch.m.row)
		b = le.AppendUint64(b, ch.m.payOff)
		b = le.AppendUint32(b, ch.m.payLen)
		b = le.AppendUint64(b, uint64(ch.m.created))
	}
	return b
}

// decodeRollbackBatch decodes a recRollbackBatch body; keys and
// attributes are copied (replay keeps the changes past the record's
// buffer). The encoding is canonical: at least one change, deletes before
// the rest. Slices grow as changes are decoded, never to a count read from
// the record.
func decodeRollbackBatch(b []byte) (uint64, rbBatch, error) {
	d := decoder{B: b[1:]}
	uid := d.U64()
	n := d.U32()
	var rb rbBatch
	bad := func(why string) (uint64, rbBatch, error) {
		return 0, rbBatch{}, fmt.Errorf("%w: bad rollback batch record: %s", errBadRecord, why)
	}
	if d.Err || n == 0 || uint64(n)*9 > uint64(len(d.B)) {
		return bad("count")
	}
	for i := uint32(0); i < n && !d.Err; i++ {
		kind, id := d.U8(), d.U64()
		switch kind {
		case rbDelete:
			if len(rb.changes) > 0 {
				return bad("a delete after a restore")
			}
			rb.dels = append(rb.dels, id)
			continue
		case rbRestore, rbRevive:
		default:
			return bad(fmt.Sprintf("change of kind %d", kind))
		}
		ch := rbChange{kind: kind, e: snapEntry{ID: id}}
		decodeSnapEntryRest(&d, &ch.e)
		if kind == rbRevive {
			ch.m.row, ch.m.payOff, ch.m.payLen, ch.m.created = d.U32(), d.U64(), d.U32(), int64(d.U64())
		}
		rb.changes = append(rb.changes, ch)
	}
	return uid, rb, d.Done("rollback batch")
}
