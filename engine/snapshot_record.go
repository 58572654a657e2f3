package engine

import "fmt"

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
//	change: kind u8 | id u64 | then, for rbRestore and rbRevive:
//	        q f64 | visits u64 | lastReward f64 | rewardSum f64 | updated i64 |
//	        expires i64 | key u16-len bytes | attrs u32-len bytes |
//	        and for rbRevive only: row u32 | payOff u64 | payLen u32 | created i64
//
// A rollback is logged with one wal.Log.EnqueueBatch: its batches, then
// recRollback. Replay keeps the batches aside and applies them only at
// recRollback, so a log torn inside a rollback replays none of it. (One
// EnqueueBatch also keeps a checkpoint's log position from falling inside
// a rollback.)
const (
	recSnapshot      byte = 12
	recDelSnapshot   byte = 13
	recRollback      byte = 14
	recRollbackBatch byte = 18
)

// Kinds of rollback change.
const (
	rbDelete  byte = 0 // a live memory the snapshot does not hold: deleted
	rbRestore byte = 1 // a live memory the snapshot holds: its state restored
	rbRevive  byte = 2 // a ghost the snapshot holds: live again, its state restored
)

type snapshotRec struct {
	uid, seq uint64
	created  int64
	count    uint64
	name     string
}

type delSnapshotRec struct{ uid, seq uint64 }

type rollbackRec struct{ uid, seq, n uint64 }

// rbChange is one memory's change by a rollback.
type rbChange struct {
	kind byte
	e    snapEntry // id always; the rest for rbRestore and rbRevive
	m    memory    // rbRevive: the ghost's record (its ext is rebuilt from e)
}

func encodeSnapshot(r snapshotRec) []byte {
	b := make([]byte, 0, 35+len(r.name))
	b = append(b, recSnapshot)
	b = le.AppendUint64(b, r.uid)
	b = le.AppendUint64(b, r.seq)
	b = le.AppendUint64(b, uint64(r.created))
	b = le.AppendUint64(b, r.count)
	b = le.AppendUint16(b, uint16(len(r.name)))
	return append(b, r.name...)
}

func decodeSnapshot(b []byte) (snapshotRec, error) {
	d := decoder{b: b[1:]}
	var r snapshotRec
	r.uid, r.seq, r.created, r.count = d.u64(), d.u64(), int64(d.u64()), d.u64()
	r.name = string(d.take(int(d.u16())))
	if err := d.done("snapshot"); err != nil {
		return r, err
	}
	if err := checkSnapshotName(r.name); err != nil {
		return r, fmt.Errorf("%w: snapshot record: %v", errBadRecord, err)
	}
	return r, nil
}

func encodeDelSnapshot(r delSnapshotRec) []byte {
	b := append(make([]byte, 0, 17), recDelSnapshot)
	b = le.AppendUint64(b, r.uid)
	return le.AppendUint64(b, r.seq)
}

func decodeDelSnapshot(b []byte) (delSnapshotRec, error) {
	d := decoder{b: b[1:]}
	r := delSnapshotRec{uid: d.u64(), seq: d.u64()}
	return r, d.done("delsnapshot")
}

func encodeRollback(r rollbackRec) []byte {
	b := append(make([]byte, 0, 25), recRollback)
	b = le.AppendUint64(b, r.uid)
	b = le.AppendUint64(b, r.seq)
	return le.AppendUint64(b, r.n)
}

func decodeRollback(b []byte) (rollbackRec, error) {
	d := decoder{b: b[1:]}
	r := rollbackRec{uid: d.u64(), seq: d.u64(), n: d.u64()}
	return r, d.done("rollback")
}

// rbBatchBytes bounds a recRollbackBatch body (far below
// wal.MaxRecordSize, so that no change, whatever its attributes, makes a
// record too large). A variable so that crash tests can make batches tiny.
var rbBatchBytes = 1 << 20

// encodeRollbackBatches encodes changes as recRollbackBatch records of at
// most about rbBatchBytes each.
func encodeRollbackBatches(uid uint64, changes []rbChange) [][]byte {
	var out [][]byte
	for len(changes) > 0 {
		b := append(make([]byte, 0, 64<<10), recRollbackBatch)
		b = le.AppendUint64(b, uid)
		b = le.AppendUint32(b, 0) // count, set below
		n := 0
		for n < len(changes) && (n == 0 || len(b) < rbBatchBytes) {
			b = appendRBChange(b, changes[n])
			n++
		}
		le.PutUint32(b[9:13], uint32(n))
		out = append(out, b)
		changes = changes[n:]
	}
	return out
}

func appendRBChange(b []byte, ch rbChange) []byte {
	e := ch.e
	b = append(b, ch.kind)
	b = le.AppendUint64(b, e.id)
	if ch.kind == rbDelete {
		return b
	}
	b = putF64(b, e.q)
	b = le.AppendUint64(b, e.visits)
	b = putF64(b, e.lastReward)
	b = putF64(b, e.rewardSum)
	b = le.AppendUint64(b, uint64(e.updated))
	b = le.AppendUint64(b, uint64(e.expires))
	b = le.AppendUint16(b, uint16(len(e.key)))
	b = append(b, e.key...)
	b = le.AppendUint32(b, uint32(len(e.attrs)))
	b = append(b, e.attrs...)
	if ch.kind == rbRevive {
		b = le.AppendUint32(b, ch.m.row)
		b = le.AppendUint64(b, ch.m.payOff)
		b = le.AppendUint32(b, ch.m.payLen)
		b = le.AppendUint64(b, uint64(ch.m.created))
	}
	return b
}

// decodeRollbackBatch decodes a recRollbackBatch body; keys and attributes
// are copied (replay keeps the changes past the record's buffer).
func decodeRollbackBatch(b []byte) (uint64, []rbChange, error) {
	d := decoder{b: b[1:]}
	uid := d.u64()
	n := d.u32()
	if d.err || uint64(n)*9 > uint64(len(d.b)) {
		return 0, nil, fmt.Errorf("%w: bad rollback batch record", errBadRecord)
	}
	out := make([]rbChange, n)
	for i := range out {
		ch := &out[i]
		ch.kind = d.u8()
		ch.e.id = d.u64()
		switch ch.kind {
		case rbDelete:
			continue
		case rbRestore, rbRevive:
		default:
			return 0, nil, fmt.Errorf("%w: rollback change of kind %d", errBadRecord, ch.kind)
		}
		e := &ch.e
		e.q, e.visits, e.lastReward, e.rewardSum = d.f64(), d.u64(), d.f64(), d.f64()
		e.updated, e.expires = int64(d.u64()), int64(d.u64())
		e.key = string(d.take(int(d.u16())))
		if an := d.u32(); an > 0 {
			e.attrs = append([]byte(nil), d.take(int(an))...)
		}
		if ch.kind == rbRevive {
			ch.m.row, ch.m.payOff, ch.m.payLen, ch.m.created = d.u32(), d.u64(), d.u32(), int64(d.u64())
		}
		if d.err {
			break
		}
	}
	return uid, out, d.done("rollback batch")
}
