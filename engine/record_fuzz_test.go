package engine

import (
	"bytes"
	"errors"
	"testing"

	"github.com/memrl/memrl/fuzz/corpus"
)

// recordSeeds are real log records of every type, as the engine logs
// them: the committed seed corpus of FuzzDecodeRecord
// (TestFuzzSeedsRecord keeps it current).
func recordSeeds() map[string]corpus.Seed {
	cfg := NewConfig(4)
	cfg.Index = IndexConfig{Kind: IndexIVFPQ, NList: 8, PQM: 2, PQBits: 4, TrainThreshold: 1000}
	return map[string]corpus.Seed{
		"create": {encodeCreate(createRec{uid: 3, name: "plans", cfg: cfg}), uint16(0)},
		"drop":   {encodeDrop(3), uint16(0)},
		"add": {encodeAdd(addRec{UID: 3, ID: 42, Row: 7, PayOff: 100, Created: 1e18, Q: 0.5,
			Payload: []byte(`{"plan":"a"}`), Vec: []float32{1, -0.5, 0, 2}}), uint16(4)},
		"add-empty": {encodeAdd(addRec{UID: 1, ID: 1, Vec: []float32{1}}), uint16(1)},
		"delete":    {encodeDelete(deleteRec{UID: 3, IDs: []uint64{1, 42, 1 << 50}}), uint16(0)},
		"q": {encodeQ(qRec{UID: 3, ID: 42, Q: 0.75, Visits: 3, LastReward: 1, RewardSum: 2.5,
			Updated: 1e18}), uint16(0)},
		"add-ext": {encodeAdd(addRec{UID: 3, ID: 43, Row: 8, PayOff: 120, Created: 1e18, Q: 0.5,
			Payload: []byte("p"), Vec: []float32{1, -0.5, 0, 2}, Attrs: []byte(`{"user":"u7"}`),
			Key: "task-9", Expires: 2e18}), uint16(4)},
		"add-ext-key": {encodeAdd(addRec{UID: 1, ID: 1, Vec: []float32{1}, Key: "k"}), uint16(1)},
		"set-attrs":   {encodeSetAttrs(setAttrsRec{UID: 3, ID: 42, Attrs: []byte(`{"a":[1,2]}`)}), uint16(0)},
		"unset-attrs": {encodeSetAttrs(setAttrsRec{UID: 3, ID: 42}), uint16(0)},
		"set-payload": {encodeSetPayload(setPayloadRec{UID: 3, ID: 42, PayOff: 4096, Payload: []byte("new")}), uint16(0)},
		"expire":      {encodeExpire(expireRec{UID: 3, ID: 42, Expires: 2e18}), uint16(0)},
		"snapshot":    {encodeSnapshot(snapshotRec{UID: 3, Seq: 2, Created: 1e18, Count: 5, Name: "good point"}), uint16(0)},
		"delsnapshot": {encodeDelSnapshot(delSnapshotRec{UID: 3, Seq: 2}), uint16(0)},
		"rollback":    {encodeRollback(rollbackRec{UID: 3, Seq: 2, N: 3}), uint16(0)},
		"rollback-batch": {encodeRollbackBatch(3, rbBatch{dels: []uint64{9}, changes: []rbChange{
			{kind: rbRestore, e: snapEntry{ID: 2, Q: 1.5, Visits: 3, LastReward: -1, RewardSum: 2, Updated: 5, Expires: 6, Key: "k", Attrs: []byte(`{"a":1}`)}},
			{kind: rbRevive, e: snapEntry{ID: 3, Q: 2}, m: memory{row: 4, payOff: 5, payLen: 6, created: 7}},
		}}), uint16(0)},
		"group-member": {encodeGroupMember(1<<60, encodeAdd(addRec{UID: 3, ID: 44, Vec: []float32{1, 2, 3, 4},
			Key: "k6434"})), uint16(4)},
		"group-member-delete": {encodeGroupMember(1<<60, encodeDelete(deleteRec{UID: 3, IDs: []uint64{43}})), uint16(0)},
		"group-commit":        {encodeGroupCommit(1<<60, 2, 0x1234_5678_9abc_def0), uint16(0)},
		"group-abort":         {encodeGroupAbort(1 << 60), uint16(0)},
		"replace": {encodeReplace(replaceRec{uid: 3, id: 42, row: 9, flags: replaceAttrs | replacePayload,
			attrs: []byte(`{"tags":["a"]}`), payOff: 4096, payload: []byte("p"), vec: []float32{1, -0.5, 0, 2}}), uint16(4)},
		"replace-vector": {encodeReplace(replaceRec{uid: 3, id: 42, row: 10, vec: []float32{0, 1, 0, 0}}), uint16(4)},
		"remap":          {encodeRemap(remapRec{uid: 3, gen: 2, nrows: 1000, paySize: 1 << 20, mapSum: 0x1234_5678_9abc_def0}), uint16(0)},
	}
}

func TestFuzzSeedsRecord(t *testing.T) {
	corpus.Check(t, "FuzzDecodeRecord", recordSeeds())
}

// TestDecodeShortAddAllocatesLittle is the regression test of a
// FuzzDecodeRecord finding: an add record cut short after a payload
// length of nearly 4 GiB made the decoder allocate that length (its
// padding for a short read) before failing.
func TestDecodeShortAddAllocatesLittle(t *testing.T) {
	b := encodeAdd(addRec{UID: 1, ID: 1, Vec: []float32{1}})
	at := 1 + 8 + 8 + 4 + 8 + 8 + 8 // the payload length
	le.PutUint32(b[at:], 0xfffffff0)
	before := allocatedBytes()
	_, err := decodeAdd(b, 1)
	if used := allocatedBytes() - before; used > 1<<20 {
		t.Errorf("decoding a %d-byte record allocated %d bytes", len(b), used)
	}
	if !errors.Is(err, errBadRecord) {
		t.Errorf("decodeAdd: %v, want errBadRecord", err)
	}
}

// decodeRecord decodes rec as replayRecord does and re-encodes what it
// accepted.
func decodeRecord(rec []byte, dim int) ([]byte, error) {
	if len(rec) == 0 {
		return nil, errBadRecord
	}
	switch rec[0] {
	case recCreate, recCreateIndexed:
		r, err := decodeCreate(rec)
		return encodeCreate(r), err
	case recIndexed:
		r, err := decodeIndexed(rec)
		return encodeIndexed(r), err
	case recDrop:
		uid, err := decodeDrop(rec)
		return encodeDrop(uid), err
	case recAdd, recAddExt:
		if _, err := addRecUID(rec); err != nil {
			return nil, err
		}
		r, err := decodeAdd(rec, dim)
		return encodeAdd(r), err
	case recDelete:
		r, err := decodeDelete(rec)
		return encodeDelete(r), err
	case recQ:
		r, err := decodeQ(rec)
		return encodeQ(r), err
	case recSetAttrs:
		r, err := decodeSetAttrs(rec)
		return encodeSetAttrs(r), err
	case recSetPayload:
		r, err := decodeSetPayload(rec)
		return encodeSetPayload(r), err
	case recExpire:
		r, err := decodeExpire(rec)
		return encodeExpire(r), err
	case recSnapshot:
		r, err := decodeSnapshot(rec)
		return encodeSnapshot(r), err
	case recDelSnapshot:
		r, err := decodeDelSnapshot(rec)
		return encodeDelSnapshot(r), err
	case recRollback:
		r, err := decodeRollback(rec)
		return encodeRollback(r), err
	case recRollbackBatch:
		uid, rb, err := decodeRollbackBatch(rec)
		return encodeRollbackBatch(uid, rb), err
	case recGroupMember:
		gid, inner, err := decodeGroupMember(rec)
		if err != nil {
			return nil, err
		}
		enc, err := decodeRecord(inner, dim)
		return encodeGroupMember(gid, enc), err
	case recGroupCommit:
		r, err := decodeGroupCommit(rec)
		return encodeGroupCommit(r.gid, r.n, r.sum), err
	case recGroupAbort:
		gid, err := decodeGroupAbort(rec)
		return encodeGroupAbort(gid), err
	case recRemap:
		r, err := decodeRemap(rec)
		return encodeRemap(r), err
	case recReplace:
		if _, err := addRecUID(rec); err != nil {
			return nil, err
		}
		r, err := decodeReplace(rec, dim)
		return encodeReplace(r), err
	}
	return nil, errBadRecord
}

// FuzzDecodeRecord decodes arbitrary bytes as a log record (of the
// collection dimension dim, for adds), as replay does after the WAL has
// verified a frame. Invariants: no panic; a refusal wraps errBadRecord;
// decoding allocates at most a constant plus a small multiple of the
// record's length, whatever length fields it holds; an accepted record
// re-encodes to exactly its bytes (the encoding is canonical, so nothing
// was skipped or invented).
func FuzzDecodeRecord(f *testing.F) {
	f.Add([]byte{recAdd}, uint16(4))
	f.Fuzz(func(t *testing.T, rec []byte, dim uint16) {
		before := allocatedBytes()
		enc, err := decodeRecord(rec, int(dim))
		if used := allocatedBytes() - before; used > 64<<10+4*uint64(len(rec)) {
			t.Fatalf("decoding a %d-byte record allocated %d bytes", len(rec), used)
		}
		if err != nil {
			if !errors.Is(err, errBadRecord) {
				t.Fatalf("error %v does not wrap errBadRecord", err)
			}
			return
		}
		if !bytes.Equal(enc, rec) {
			t.Fatalf("record %x re-encodes as %x", rec, enc)
		}
	})
}
