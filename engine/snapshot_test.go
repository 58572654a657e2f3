package engine

import (
	"errors"
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/memrl/memrl/engine/filter"
	"github.com/memrl/memrl/vfs"
	"github.com/memrl/memrl/wal"
)

// memState is everything a client can read of one memory.
type memState struct {
	Q, LastReward, Mean float64
	Visits              uint64
	Created, Updated    int64
	Payload, Vec        string
	Attrs, Key          string
	Expires             int64
}

// collState reads the visible state of c: every memory SCAN returns, and
// checks that Get, key lookups, Count and an exhaustive retrieval agree
// with it (so a ghost that leaked into any of them fails the test).
func collState(t *testing.T, c *Collection) map[uint64]memState {
	t.Helper()
	out := map[uint64]memState{}
	for cur := uint64(0); ; {
		page, next, err := c.Scan(cur, ScanOptions{Count: MaxScanCount, WithPayload: true, WithVector: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, mi := range page {
			var x int64
			if !mi.Expires.IsZero() {
				x = mi.Expires.UnixNano()
			}
			out[mi.ID] = memState{Q: mi.Q, LastReward: mi.LastReward, Mean: mi.MeanReward, Visits: mi.Visits,
				Created: mi.Created.UnixNano(), Updated: mi.Updated.UnixNano(), Payload: string(mi.Payload),
				Vec: fmt.Sprint(mi.Vector), Attrs: string(mi.Attrs), Key: mi.Key, Expires: x}
		}
		if next == 0 {
			break
		}
		cur = next
	}
	if n, err := c.Count(); err != nil || n != len(out) {
		t.Fatalf("Count %d, %v; scan found %d", n, err, len(out))
	}
	for id, s := range out {
		mi, err := c.Get(id)
		if err != nil || mi.Q != s.Q || string(mi.Attrs) != s.Attrs {
			t.Fatalf("Get(%d): %+v, %v; scan: %+v", id, mi, err, s)
		}
		if s.Key != "" {
			if mi, err := c.GetRef(ByKey(s.Key)); err != nil || mi.ID != id {
				t.Fatalf("key %q: %d, %v; want %d", s.Key, mi.ID, err, id)
			}
		}
	}
	if len(out) > 0 {
		opt := NewRetrieveOptions()
		opt.K1, opt.K2 = len(out)+8, len(out)+8
		res, err := c.Retrieve([]float32{1, 0, 0, 0}, opt)
		if err != nil {
			t.Fatal(err)
		}
		got := map[uint64]bool{}
		for _, r := range res {
			got[r.ID] = true
		}
		if len(got) != len(out) {
			t.Fatalf("retrieval of everything returned %d memories, scan %d", len(got), len(out))
		}
		for id := range got {
			if _, ok := out[id]; !ok {
				t.Fatalf("retrieval returned memory %d, which scan does not", id)
			}
		}
	}
	return out
}

func diffState(want, got map[uint64]memState) string {
	for id, w := range want {
		g, ok := got[id]
		if !ok {
			return fmt.Sprintf("memory %d missing (want %+v)", id, w)
		}
		if g != w {
			return fmt.Sprintf("memory %d: got %+v, want %+v", id, g, w)
		}
	}
	for id := range got {
		if _, ok := want[id]; !ok {
			return fmt.Sprintf("memory %d present, not wanted", id)
		}
	}
	return ""
}

func snapVec(rng *rand.Rand) []float32 {
	return []float32{rng.Float32() + 0.1, rng.Float32(), rng.Float32(), rng.Float32()}
}

// TestRollbackModel runs random adds, rewards, deletes, prunes, attribute
// changes, snapshots, rollbacks, snapshot deletes, checkpoints, clean
// reopens and crash reopens, and checks after every rollback that the
// visible state equals exactly the one recorded when its snapshot was
// taken, and after every reopen that nothing changed.
func TestRollbackModel(t *testing.T) {
	for seed := int64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { rollbackModel(t, seed, 400) })
	}
}

func rollbackModel(t *testing.T, seed int64, steps int) {
	rng := rand.New(rand.NewSource(seed))
	clk := newFakeClock()
	fs := vfs.NewMemFS()
	opts := Options{Now: clk.Now, SweepInterval: -1}
	db, c := openAttrsDB(t, fs, opts)
	defer func() { db.Close() }()
	snaps := map[string]map[uint64]memState{}
	var ids []uint64
	seq := 0
	for step := 0; step < steps; step++ {
		clk.advance(time.Millisecond)
		switch k := rng.Intn(100); {
		case k < 30:
			req := AddRequest{Vector: snapVec(rng), Payload: []byte(fmt.Sprint("p", step))}
			if rng.Intn(2) == 0 {
				req.Attrs = []byte(fmt.Sprintf(`{"g":%d}`, rng.Intn(3)))
			}
			if rng.Intn(3) == 0 {
				req.Key = fmt.Sprint("k", step)
			}
			id, err := c.Add(req)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		case k < 50 && len(ids) > 0:
			id := ids[rng.Intn(len(ids))]
			if _, err := c.Reward(rng.Float64()*2-1, []uint64{id}, nil); err != nil && !errors.Is(err, ErrNoMemory) {
				t.Fatal(err)
			}
		case k < 60 && len(ids) > 0:
			if _, err := c.Delete([]uint64{ids[rng.Intn(len(ids))]}); err != nil {
				t.Fatal(err)
			}
		case k < 63:
			_, tk, err := c.Prune(PruneOptions{HasQBelow: true, QBelow: -0.05})
			if err == nil && tk != 0 {
				err = db.WaitDurable(tk)
			}
			if err != nil {
				t.Fatal(err)
			}
		case k < 68 && len(ids) > 0:
			err := c.SetAttrs(ByID(ids[rng.Intn(len(ids))]), []byte(fmt.Sprintf(`{"g":%d,"s":%d}`, rng.Intn(3), step)))
			if err != nil && !errors.Is(err, ErrNoMemory) {
				t.Fatal(err)
			}
		case k < 76:
			seq++
			name := fmt.Sprint("s", seq)
			if err := c.Snapshot(name); err != nil {
				t.Fatal(err)
			}
			snaps[name] = collState(t, c)
		case k < 86 && len(snaps) > 0:
			names := slices.Sorted(maps.Keys(snaps))
			name := names[rng.Intn(len(names))]
			if _, err := c.Rollback(name); err != nil {
				t.Fatalf("step %d: rollback %s: %v", step, name, err)
			}
			if d := diffState(snaps[name], collState(t, c)); d != "" {
				t.Fatalf("step %d: after rollback to %s: %s", step, name, d)
			}
		case k < 89 && len(snaps) > 0:
			names := slices.Sorted(maps.Keys(snaps))
			name := names[rng.Intn(len(names))]
			if ok, err := c.DeleteSnapshot(name); err != nil || !ok {
				t.Fatalf("delete %s: %v %v", name, ok, err)
			}
			delete(snaps, name)
		case k < 92:
			if err := db.Checkpoint(); err != nil {
				t.Fatal(err)
			}
		case k < 96:
			before := collState(t, c)
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			db, c = openAttrsDB(t, fs, opts)
			if d := diffState(before, collState(t, c)); d != "" {
				t.Fatalf("step %d: after reopen: %s", step, d)
			}
		default:
			before := collState(t, c)
			db.Close()
			fs, db = crashOpen2(t, fs, opts, seed+int64(step))
			var err error
			if c, err = db.Collection("c"); err != nil {
				t.Fatal(err)
			}
			if d := diffState(before, collState(t, c)); d != "" {
				t.Fatalf("step %d: after crash: %s", step, d)
			}
		}
		list, err := c.Snapshots()
		if err != nil || len(list) != len(snaps) {
			t.Fatalf("step %d: %d snapshots listed (%v), want %d", step, len(list), err, len(snaps))
		}
		for _, s := range list {
			if _, ok := snaps[s.Name]; !ok || s.Memories != len(snaps[s.Name]) || s.Damage != "" {
				t.Fatalf("step %d: listed %+v", step, s)
			}
		}
	}
	// Every snapshot left still rolls back exactly, after a restart.
	db.Close()
	db, c = openAttrsDB(t, fs, opts)
	for name, want := range snaps {
		if _, err := c.Rollback(name); err != nil {
			t.Fatal(err)
		}
		if d := diffState(want, collState(t, c)); d != "" {
			t.Fatalf("final rollback to %s: %s", name, d)
		}
	}
}

// TestGhostsInvisibleUntilRollback: a memory deleted (or pruned) while a
// snapshot holds it is gone from Get, key lookups, Scan, Count, filtered
// counts and retrieval, also after a restart, and is back, with its
// vector, payload, key and attributes, after the rollback; its id cannot be
// given to a new memory meanwhile.
func TestGhostsInvisibleUntilRollback(t *testing.T) {
	fs := vfs.NewMemFS()
	opts := Options{SweepInterval: -1}
	db, c := openAttrsDB(t, fs, opts)
	defer func() { db.Close() }()
	if err := c.IndexField("g", true); err != nil { // filters then go through the bitmaps
		t.Fatal(err)
	}
	a, err := c.Add(AddRequest{Vector: []float32{1, 0, 0, 0}, Payload: []byte("a"), Key: "ka", Attrs: []byte(`{"g":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Add(AddRequest{Vector: []float32{0, 1, 0, 0}, Payload: []byte("b"), HasQ: true, Q: -5})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Snapshot("good"); err != nil {
		t.Fatal(err)
	}
	want := collState(t, c)
	if _, err := c.Delete([]uint64{a}); err != nil {
		t.Fatal(err)
	}
	if n, tk, err := c.Prune(PruneOptions{HasQBelow: true, QBelow: 0}); err != nil || n != 1 || db.WaitDurable(tk) != nil {
		t.Fatalf("prune: %d %v", n, err)
	}
	g1, _ := filter.Parse(".g == 1")
	check := func(when string) {
		t.Helper()
		if s := collState(t, c); len(s) != 0 {
			t.Fatalf("%s: %d memories visible", when, len(s))
		}
		for _, id := range []uint64{a, b} {
			if _, err := c.Get(id); !errors.Is(err, ErrNoMemory) {
				t.Fatalf("%s: Get(%d): %v", when, id, err)
			}
		}
		if _, err := c.GetRef(ByKey("ka")); !errors.Is(err, ErrNoMemory) {
			t.Fatalf("%s: key: %v", when, err)
		}
		if n, err := c.CountFilter(g1); err != nil || n != 0 {
			t.Fatalf("%s: filtered count %d, %v", when, n, err)
		}
		opt := NewRetrieveOptions()
		if res, err := c.Retrieve([]float32{1, 0, 0, 0}, opt); err != nil || len(res) != 0 {
			t.Fatalf("%s: retrieve: %v %v", when, res, err)
		}
		if _, err := c.Add(AddRequest{Vector: []float32{1, 1, 1, 1}, ID: a, HasID: true}); !errors.Is(err, ErrIDPinned) {
			t.Fatalf("%s: add of a pinned id: %v", when, err)
		}
		// The key is free: a new memory may take it; the rollback deletes it.
		if st, _ := c.SnapshotStats(); st.Pinned != 2 || st.Snapshots != 1 {
			t.Fatalf("%s: stats %+v", when, st)
		}
	}
	check("after the deletes")
	db.Close()
	db, c = openAttrsDB(t, fs, opts)
	check("after a restart")
	if err := db.CheckpointFull(); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, c = openAttrsDB(t, fs, opts)
	check("after a checkpoint and restart")
	n, err := c.Add(AddRequest{Vector: []float32{0, 0, 1, 0}, Key: "ka"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.Rollback("good"); err != nil || got != 3 {
		t.Fatalf("rollback: %d changes, %v; want 3 (2 revived, 1 deleted)", got, err)
	}
	if d := diffState(want, collState(t, c)); d != "" {
		t.Fatal(d)
	}
	if _, err := c.Get(n); !errors.Is(err, ErrNoMemory) {
		t.Fatalf("memory added after the snapshot: %v", err)
	}
	if n, err := c.CountFilter(g1); err != nil || n != 1 {
		t.Fatalf("filtered count after rollback: %d, %v", n, err)
	}
	// Deleted after the rollback again: it is still pinned; freed with the
	// snapshot, then its id is free again but never reused by an auto id.
	if _, err := c.Delete([]uint64{a}); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.DeleteSnapshot("good"); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if st, _ := c.SnapshotStats(); st.Pinned != 0 || st.Snapshots != 0 {
		t.Fatalf("after DELSNAPSHOT: %+v", st)
	}
	if ok, err := c.DeleteSnapshot("good"); err != nil || ok {
		t.Fatal("second delete", ok, err)
	}
	if id, err := c.Add(AddRequest{Vector: []float32{1, 1, 1, 1}}); err != nil || id <= n {
		t.Fatalf("auto id %d after %d: %v", id, n, err)
	}
	if _, err := c.Rollback("good"); !errors.Is(err, ErrNoSnapshot) {
		t.Fatal(err)
	}
}

// TestSnapshotBadInput: bad names, duplicates and too many snapshots fail
// with their sentinels and change nothing.
func TestSnapshotBadInput(t *testing.T) {
	db, c := openAttrsDB(t, vfs.NewMemFS(), Options{SweepInterval: -1})
	defer db.Close()
	for _, name := range []string{"", string(make([]byte, MaxSnapshotName+1)), "a\nb", "é"} {
		if err := c.Snapshot(name); !errors.Is(err, ErrBadSnapshotName) {
			t.Fatalf("name %q: %v", name, err)
		}
	}
	if err := c.Snapshot("x y"); err != nil {
		t.Fatal(err)
	}
	if err := c.Snapshot("x y"); !errors.Is(err, ErrSnapshotExists) {
		t.Fatal(err)
	}
	for i := 1; i < MaxSnapshots; i++ {
		if err := c.Snapshot(fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Snapshot("one more"); !errors.Is(err, ErrTooManySnapshots) {
		t.Fatal(err)
	}
	if l, _ := c.Snapshots(); len(l) != MaxSnapshots || l[0].Name != "x y" {
		t.Fatalf("%d listed, first %+v", len(l), l[0])
	}
	if n, err := c.Rollback("x y"); err != nil || n != 0 {
		t.Fatalf("rollback to the present: %d, %v", n, err)
	}
}

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

// TestForEachPinned: compaction's seam reports every ghost, and a row it
// moves is kept (a rollback then revives the memory at the new row).
func TestForEachPinned(t *testing.T) {
	db, c := openAttrsDB(t, vfs.NewMemFS(), Options{SweepInterval: -1})
	defer db.Close()
	for i := 0; i < 4; i++ {
		if _, err := c.Add(AddRequest{Vector: []float32{1, float32(i), 0, 0}, Payload: []byte{byte(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Snapshot("s"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Delete([]uint64{2, 3}); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	var seen []uint64
	c.forEachPinnedLocked(func(id uint64, m *memory) {
		seen = append(seen, id)
		if id == 3 {
			m.row = 1 // pretend compaction moved it (to the row of memory 2, same vector bytes checked below)
		}
	})
	got := c.snap.ghosts[3].row
	c.mu.Unlock()
	slices.Sort(seen)
	if !slices.Equal(seen, []uint64{2, 3}) || got != 1 {
		t.Fatalf("pinned %v, row of 3 after the move %d", seen, got)
	}
}

// TestSnapshotRecordsRoundTrip: the records decode to what was encoded, and
// a truncated or over-long body is errBadRecord.
func TestSnapshotRecordsRoundTrip(t *testing.T) {
	sr := snapshotRec{uid: 3, seq: 7, created: 99, count: 5, name: "n"}
	if got, err := decodeSnapshot(encodeSnapshot(sr)); err != nil || got != sr {
		t.Fatal(got, err)
	}
	dr := delSnapshotRec{uid: 3, seq: 7}
	if got, err := decodeDelSnapshot(encodeDelSnapshot(dr)); err != nil || got != dr {
		t.Fatal(got, err)
	}
	rr := rollbackRec{uid: 3, seq: 7, n: 9}
	if got, err := decodeRollback(encodeRollback(rr)); err != nil || got != rr {
		t.Fatal(got, err)
	}
	rb := rbBatch{dels: []uint64{1}, changes: []rbChange{
		{kind: rbRestore, e: snapEntry{id: 2, q: 1.5, visits: 3, lastReward: -1, rewardSum: 2, updated: 5, expires: 6, key: "k", attrs: []byte(`{"a":1}`)}},
		{kind: rbRevive, e: snapEntry{id: 3, q: 2}, m: memory{row: 4, payOff: 5, payLen: 6, created: 7}},
	}}
	recs := encodeRollbackBatches(3, rb)
	if len(recs) != 1 {
		t.Fatalf("%d batches", len(recs))
	}
	uid, got, err := decodeRollbackBatch(recs[0])
	if err != nil || uid != 3 || got.len() != 3 || got.dels[0] != 1 || got.changes[0].e.key != "k" ||
		string(got.changes[0].e.attrs) != `{"a":1}` || got.changes[1].m.row != 4 || got.changes[1].m.created != 7 ||
		got.changes[1].e.q != 2 {
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
		big.changes = append(big.changes, rbChange{kind: rbRestore, e: snapEntry{id: uint64(i), attrs: make([]byte, 30000)}})
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

// TestRollbackThroughIndex: memories deleted after a snapshot of an IVF-PQ
// collection are tombstoned in the index (never retrieved), and come back
// in retrievals through the index after the rollback, also after a
// restart (index reloaded from its file).
func TestRollbackThroughIndex(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Dim: 32, Metric: L2, Alpha: 0.3, Index: IndexConfig{NList: 16, TrainThreshold: 2000}}
	opts := Options{Sync: wal.SyncNone, CheckpointInterval: -1, Logf: t.Logf}
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { db.Close() }()
	if err := db.Create("ix", cfg); err != nil {
		t.Fatal(err)
	}
	c, _ := db.Collection("ix")
	rng := rand.New(rand.NewSource(3))
	vecs := map[uint64][]float32{}
	for _, v := range clustered(rng, 2500, 32) {
		id, err := c.Add(AddRequest{Vector: v})
		if err != nil {
			t.Fatal(err)
		}
		vecs[id] = v
	}
	waitIndexed(t, c)
	if err := c.Snapshot("s"); err != nil {
		t.Fatal(err)
	}
	deleted := map[uint64]bool{}
	var del []uint64
	for id := uint64(1); id <= 2500; id += 5 {
		deleted[id] = true
		del = append(del, id)
	}
	if _, err := c.Delete(del); err != nil {
		t.Fatal(err)
	}
	if r := recallAt1(t, c, vecs, deleted); r < 0.95 { // fails if a deleted memory is retrieved
		t.Fatalf("recall@1 of the rest %.3f", r)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if db, err = Open(dir, opts); err != nil {
		t.Fatal(err)
	}
	c, _ = db.Collection("ix")
	if info, _ := c.Info(); info.Index == "flat" {
		t.Fatalf("index not reloaded: %s", info.Index)
	}
	if n, err := c.Rollback("s"); err != nil || n != len(del) {
		t.Fatalf("rollback: %d, %v; want %d revived", n, err, len(del))
	}
	if r := recallAt1(t, c, vecs, nil); r < 0.95 {
		t.Fatalf("recall@1 after the rollback %.3f", r)
	}
	hit := 0
	for id := range deleted {
		opt := NewRetrieveOptions()
		opt.K1, opt.K2, opt.Lambda = 10, 1, 0
		res, err := c.Retrieve(vecs[id], opt)
		if err != nil {
			t.Fatal(err)
		}
		if len(res) > 0 && res[0].ID == id {
			hit++
		}
	}
	if float64(hit) < 0.95*float64(len(deleted)) {
		t.Fatalf("revived memories found first %d of %d times", hit, len(deleted))
	}
}

// TestRollbackAfterPinnedRowMoved is the snapshot side of compaction's
// contract (forEachPinnedLocked): a ghost's row moved by compaction is
// kept through a checkpoint and a restart, and the rollback revives the
// memory at its new row (which then is live, and the old one not). The
// move here stands in for compaction: row 1 holds the same vector bytes as
// the ghost's row 0 (memory 2, not pinned, was added with them).
func TestRollbackAfterPinnedRowMoved(t *testing.T) {
	fs := vfs.NewMemFS()
	opts := Options{SweepInterval: -1}
	db, c := openAttrsDB(t, fs, opts)
	defer func() { db.Close() }()
	v := []float32{1, 2, 3, 4}
	if _, err := c.Add(AddRequest{Vector: v, Payload: []byte("a"), Attrs: []byte(`{"g":1}`)}); err != nil {
		t.Fatal(err)
	}
	if err := c.Snapshot("s"); err != nil {
		t.Fatal(err)
	}
	want := collState(t, c)
	if _, err := c.Add(AddRequest{Vector: v, Payload: []byte("b")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Delete([]uint64{1, 2}); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	c.forEachPinnedLocked(func(id uint64, m *memory) {
		if id != 1 || m.row != 0 {
			t.Errorf("pinned %d at row %d, want 1 at 0", id, m.row)
		}
		m.row = 1
	})
	c.mu.Unlock()
	if err := db.CheckpointFull(); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, c = openAttrsDB(t, fs, opts)
	if n, err := c.Rollback("s"); err != nil || n != 1 {
		t.Fatalf("rollback: %d, %v", n, err)
	}
	if d := diffState(want, collState(t, c)); d != "" {
		t.Fatal(d)
	}
	c.mu.RLock()
	row, dead0, dead1 := c.mems[1].row, c.dead.Contains(0), c.dead.Contains(1)
	c.mu.RUnlock()
	if row != 1 || !dead0 || dead1 {
		t.Fatalf("revived at row %d; row 0 dead %v, row 1 dead %v", row, dead0, dead1)
	}
	if rep, err := c.Verify(); err != nil || rep.Err() != nil {
		t.Fatalf("verify: %v %v", err, rep.Err())
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

// TestSnapshotConcurrent runs snapshots, rollbacks and snapshot deletes
// beside adds, rewards, deletes, retrievals and scans, and checkpoints
// (run it with -race). At the end the collection is consistent (every
// reader agrees, collState) and a restart, clean or after a crash, shows
// the same state.
func TestSnapshotConcurrent(t *testing.T) {
	fs := vfs.NewMemFS()
	opts := Options{SweepInterval: -1}
	db, c := openAttrsDB(t, fs, opts)
	defer func() { db.Close() }()
	for i := 0; i < 200; i++ {
		if _, err := c.Add(AddRequest{Vector: []float32{1, float32(i), 0, 0}}); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	errc := make(chan error, 4)
	worker := func(seed int64, fn func(rng *rand.Rand) error) {
		rng := rand.New(rand.NewSource(seed))
		for {
			select {
			case <-stop:
				errc <- nil
				return
			default:
			}
			if err := fn(rng); err != nil && !errors.Is(err, ErrNoMemory) && !errors.Is(err, ErrIDExists) {
				errc <- err
				return
			}
		}
	}
	go worker(1, func(rng *rand.Rand) error {
		_, err := c.Add(AddRequest{Vector: snapVec(rng), Attrs: []byte(`{"g":1}`)})
		return err
	})
	go worker(2, func(rng *rand.Rand) error {
		_, err := c.Reward(rng.Float64()*2-1, []uint64{1 + uint64(rng.Intn(400))}, nil)
		return err
	})
	go worker(3, func(rng *rand.Rand) error {
		_, err := c.Delete([]uint64{1 + uint64(rng.Intn(400))})
		return err
	})
	go worker(4, func(rng *rand.Rand) error {
		opt := NewRetrieveOptions()
		if _, err := c.Retrieve(snapVec(rng), opt); err != nil {
			return err
		}
		_, _, err := c.Scan(0, ScanOptions{Count: 50})
		return err
	})
	for i := 0; i < 30; i++ {
		name := fmt.Sprint("s", i)
		if err := c.Snapshot(name); err != nil {
			t.Fatal(err)
		}
		if i%3 == 2 {
			if _, err := c.Rollback(fmt.Sprint("s", i-1)); err != nil {
				t.Fatal(err)
			}
		}
		if i%4 == 3 {
			if _, err := c.DeleteSnapshot(fmt.Sprint("s", i-2)); err != nil {
				t.Fatal(err)
			}
		}
		if i%5 == 0 {
			if err := db.Checkpoint(); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(stop)
	for range 4 {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	before := collState(t, c)
	list, _ := c.Snapshots()
	db.Close()
	_, db = crashOpen2(t, fs, opts, 1)
	c, _ = db.Collection("c")
	if d := diffState(before, collState(t, c)); d != "" {
		t.Fatalf("after a crash: %s", d)
	}
	// Every snapshot left still rolls back (its memories all kept).
	for _, s := range list {
		if _, err := c.Rollback(s.Name); err != nil {
			t.Fatalf("rollback to %s: %v", s.Name, err)
		}
		if st := collState(t, c); len(st) != s.Memories {
			t.Fatalf("rollback to %s: %d memories, want %d", s.Name, len(st), s.Memories)
		}
	}
}
