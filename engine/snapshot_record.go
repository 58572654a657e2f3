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
// A rollback is logged with one wal.Log.EnqueueBatch: its batches, then
// recRollback. Replay keeps the batches aside and applies them only at
// recRollback, so a log torn inside a rollback replays none of it. (One
// EnqueueBatch also keeps a checkpoint's log position from falling inside
// a rollback.)
//
// The bodies of recSnapshot, recDelSnapshot, recRollbackBatch and
// recRollback are package record's (its doc.go draws them); the engine
// converts a batch's changes to and from its rbChange, which holds the
// engine's memory record.
const (
	recSnapshot      = record.TypeSnapshot
	recDelSnapshot   = record.TypeDelSnapshot
	recRollback      = record.TypeRollback
	recRollbackBatch = record.TypeRollbackBatch
)

// Kinds of rollback change.
const (
	rbDelete  = record.RollbackDelete  // a live memory the snapshot does not hold: deleted
	rbRestore = record.RollbackRestore // a live memory the snapshot holds: its state restored
	rbRevive  = record.RollbackRevive  // a ghost the snapshot holds: live again, its state restored
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

// encodeRollbackBatch encodes rb as one recRollbackBatch body
// (record.EncodeRollbackBatch).
func encodeRollbackBatch(uid uint64, rb rbBatch) []byte {
	r := record.RollbackBatch{UID: uid, Dels: rb.dels, Changes: make([]record.RollbackChange, len(rb.changes))}
	for i, ch := range rb.changes {
		r.Changes[i] = record.RollbackChange{Kind: ch.kind, Entry: ch.e,
			Row: ch.m.row, PayOff: ch.m.payOff, PayLen: ch.m.payLen, Created: ch.m.created}
	}
	return record.EncodeRollbackBatch(r)
}

// decodeRollbackBatch decodes a recRollbackBatch body
// (record.DecodeRollbackBatch): keys and attributes are copied, and a
// revived memory's record holds its row, payload and creation time (its
// ext is rebuilt from the entry when the change is applied).
func decodeRollbackBatch(b []byte) (uint64, rbBatch, error) {
	r, err := record.DecodeRollbackBatch(b)
	rb := rbBatch{dels: r.Dels}
	if len(r.Changes) > 0 {
		rb.changes = make([]rbChange, len(r.Changes))
	}
	for i, ch := range r.Changes {
		rb.changes[i] = rbChange{kind: ch.Kind, e: ch.Entry,
			m: memory{row: ch.Row, payOff: ch.PayOff, payLen: ch.PayLen, created: ch.Created}}
	}
	return r.UID, rb, err
}
