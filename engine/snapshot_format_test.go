package engine

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/memrl/memrl/vfs"
)

// TestSnapshotFileDamaged: a snapshot file that fails its checksum (or is
// truncated, or of another version) does not stop Open: the snapshot is
// listed, MEM.ROLLBACK to it fails with ErrSnapshotDamaged and changes
// nothing, it pins nothing, and MEM.DELSNAPSHOT frees it. The other
// snapshots are untouched. A missing file (a crash between the record and
// the file) drops the entry.
func TestSnapshotFileDamaged(t *testing.T) {
	for _, damage := range []string{"flip", "truncate", "version", "missing"} {
		t.Run(damage, func(t *testing.T) {
			fs := vfs.NewMemFS()
			var logs []string
			opts := crashOpts(fs)
			opts.Logf = func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }
			db, c := openAttrsDB(t, fs, Options{SweepInterval: -1})
			for i := 0; i < 5; i++ {
				if _, err := c.Add(AddRequest{Vector: []float32{1, float32(i), 0, 0}}); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.Snapshot("bad"); err != nil {
				t.Fatal(err)
			}
			if err := c.Snapshot("good"); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Delete([]uint64{1}); err != nil {
				t.Fatal(err)
			}
			path := c.snapshotPath(1)
			db.Close()
			b, err := vfs.ReadFile(fs, path)
			if err != nil {
				t.Fatal(err)
			}
			switch damage {
			case "flip":
				b[len(b)/2] ^= 0x40
			case "truncate":
				b = b[:len(b)-3]
			case "version":
				b[8] = 9
			}
			if damage == "missing" {
				err = fs.Remove(path)
			} else {
				err = vfs.WriteFileAtomic(fs, path, b)
			}
			if err != nil {
				t.Fatal(err)
			}
			db, err = Open("/db", opts)
			if err != nil {
				t.Fatalf("open with a damaged snapshot: %v", err)
			}
			defer db.Close()
			c, _ = db.Collection("c")
			list, _ := c.Snapshots()
			if damage == "missing" {
				if len(list) != 1 || list[0].Name != "good" {
					t.Fatalf("listed %+v", list)
				}
			} else {
				if len(list) != 2 || list[0].Damage == "" || list[1].Damage != "" {
					t.Fatalf("listed %+v", list)
				}
				before := collState(t, c)
				if _, err := c.Rollback("bad"); !errors.Is(err, ErrSnapshotDamaged) {
					t.Fatalf("rollback to a damaged snapshot: %v", err)
				}
				if d := diffState(before, collState(t, c)); d != "" {
					t.Fatal(d)
				}
			}
			if len(logs) == 0 {
				t.Fatal("nothing logged")
			}
			if n, err := c.Rollback("good"); err != nil || n != 1 {
				t.Fatalf("rollback to the good one: %d %v", n, err)
			}
			ok, err := c.DeleteSnapshot("bad")
			if err != nil || ok != (damage != "missing") {
				t.Fatal(ok, err)
			}
		})
	}
}

// TestSnapshotSectionDamaged: a snapshot section that does not decode
// (inside a checkpoint whose checksum passes: a bug, or a newer build)
// stops Open with ErrCorruptCheckpoint.
func TestSnapshotSectionDamaged(t *testing.T) {
	c := &Collection{}
	for _, data := range [][]byte{nil, {2}, {1, 0, 0}, append([]byte{1}, make([]byte, 20)...)} {
		if err := c.loadSnapSectionLocked(data, 10); err == nil {
			t.Fatalf("section %v accepted", data)
		}
	}
}

// TestSnapshotRecordsRoundTrip: the records decode to what was encoded, and
// a truncated or over-long body is errBadRecord.
func TestSnapshotRecordsRoundTrip(t *testing.T) {
	sr := snapshotRec{UID: 3, Seq: 7, Created: 99, Count: 5, Name: "n"}
	if got, err := decodeSnapshot(encodeSnapshot(sr)); err != nil || got != sr {
		t.Fatal(got, err)
	}
	dr := delSnapshotRec{UID: 3, Seq: 7}
	if got, err := decodeDelSnapshot(encodeDelSnapshot(dr)); err != nil || got != dr {
		t.Fatal(got, err)
	}
	rr := rollbackRec{UID: 3, Seq: 7, N: 9}
	if got, err := decodeRollback(encodeRollback(rr)); err != nil || got != rr {
		t.Fatal(got, err)
	}
	rb := rbBatch{dels: []uint64{1}, changes: []rbChange{
		{kind: rbRestore, e: snapEntry{ID: 2, Q: 1.5, Visits: 3, LastReward: -1, RewardSum: 2, Updated: 5, Expires: 6, Key: "k", Attrs: []byte(`{"a":1}`)}},
		{kind: rbRevive, e: snapEntry{ID: 3, Q: 2}, m: memory{row: 4, payOff: 5, payLen: 6, created: 7}},
	}}
	recs := encodeRollbackBatches(3, rb)
	if len(recs) != 1 {
		t.Fatalf("%d batches", len(recs))
	}
	uid, got, err := decodeRollbackBatch(recs[0])
	if err != nil || uid != 3 || got.len() != 3 || got.dels[0] != 1 || got.changes[0].e.Key != "k" ||
		string(got.changes[0].e.Attrs) != `{"a":1}` || got.changes[1].m.row != 4 || got.changes[1].m.created != 7 ||
		got.changes[1].e.Q != 2 {
		t.Fatalf("%d %+v %v", uid, got, err)
	}
	// Not canonical: no change, or a delete after a restore.
	if _, _, err := decodeRollbackBatch(encodeRollbackBatch(3, rbBatch{})); !errors.Is(err, errBadRecord) {
		t.Fatalf("empty batch: %v", err)
	}
	swapped := encodeRollbackBatch(3, rbBatch{changes: rb.changes[:1]})
	swapped = append(swapped, rbDelete)
	swapped = le.AppendUint64(swapped, 9)
	le.PutUint32(swapped[9:], 2)
	if _, _, err := decodeRollbackBatch(swapped); !errors.Is(err, errBadRecord) {
		t.Fatalf("delete after restore: %v", err)
	}
	for _, b := range [][]byte{encodeSnapshot(sr), encodeDelSnapshot(dr), encodeRollback(rr), recs[0]} {
		for _, bad := range [][]byte{b[:len(b)-1], append(slices.Clone(b), 0)} {
			var err error
			switch b[0] {
			case recSnapshot:
				_, err = decodeSnapshot(bad)
			case recDelSnapshot:
				_, err = decodeDelSnapshot(bad)
			case recRollback:
				_, err = decodeRollback(bad)
			case recRollbackBatch:
				_, _, err = decodeRollbackBatch(bad)
			}
			if !errors.Is(err, errBadRecord) {
				t.Fatalf("record type %d, %d bytes: %v", b[0], len(bad), err)
			}
		}
	}
	// Large changes split into several batches, each far below the log's
	// record limit.
	big := rbBatch{dels: make([]uint64, 50000)}
	for i := range 100 {
		big.changes = append(big.changes, rbChange{kind: rbRestore, e: snapEntry{ID: uint64(i), Attrs: make([]byte, 30000)}})
	}
	recs = encodeRollbackBatches(1, big)
	total := 0
	for _, r := range recs {
		if len(r) > 2*rbBatchBytes {
			t.Fatalf("batch of %d bytes", len(r))
		}
		_, ch, err := decodeRollbackBatch(r)
		if err != nil {
			t.Fatal(err)
		}
		total += ch.len()
	}
	total -= 50000
	if len(recs) < 2 || total != 100 {
		t.Fatalf("%d batches, %d changes", len(recs), total)
	}
}

// TestSnapIDs: the id set of a snapshot answers for ids below and above
// 2^32 alike, and a damaged snapshot's (nil) holds nothing.
func TestSnapIDs(t *testing.T) {
	ids := []uint64{1, 2, 3, 1000, 1 << 31, 1<<32 - 1, 1 << 32, 1<<40 + 7, MaxID}
	s := newSnapIDs(ids)
	for _, id := range ids {
		if !s.contains(id) {
			t.Fatalf("%d missing", id)
		}
	}
	for _, id := range []uint64{0, 4, 999, 1<<32 + 1, 1 << 40, MaxID - 1} {
		if s.contains(id) {
			t.Fatalf("%d present", id)
		}
	}
	var none *snapIDs
	if none.contains(1) {
		t.Fatal("nil set holds 1")
	}
	// A snapshot of memories with explicit large ids pins and revives them.
	db, c := openAttrsDB(t, vfs.NewMemFS(), Options{SweepInterval: -1})
	defer db.Close()
	for _, id := range []uint64{5, 1 << 40} {
		if _, err := c.Add(AddRequest{Vector: []float32{1, 0, 0, 0}, ID: id, HasID: true}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Snapshot("s"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Delete([]uint64{5, 1 << 40}); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Rollback("s"); err != nil || n != 2 {
		t.Fatalf("rollback: %d %v", n, err)
	}
}
