package engine

import (
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/memrl/memrl/engine/filter"
	"github.com/memrl/memrl/vfs"
)

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

// TestRollbackRestoresExpiry: a snapshot leaves out memories already
// expired (unswept), and a rollback gives back each memory's expiry as it
// was (an absolute time): removed by PERSIST, it returns; a memory swept
// after the snapshot comes back with its expiry, which the next sweep
// applies again.
func TestRollbackRestoresExpiry(t *testing.T) {
	clk := newFakeClock()
	db, c := openAttrsDB(t, vfs.NewMemFS(), Options{Now: clk.Now, SweepInterval: -1})
	defer db.Close()
	add := func(ttl time.Duration) uint64 {
		id, err := c.Add(AddRequest{Vector: []float32{1, 0, 0, 0}, TTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	gone, short, long := add(time.Second), add(10*time.Second), add(100*time.Second)
	clk.advance(2 * time.Second) // gone has expired, not yet swept
	if err := c.Snapshot("s"); err != nil {
		t.Fatal(err)
	}
	if l, _ := c.Snapshots(); l[0].Memories != 2 {
		t.Fatalf("snapshot holds %d memories, want 2 (the expired one left out)", l[0].Memories)
	}
	if _, t2, err := c.PersistDeferred(ByID(long)); err != nil || db.WaitDurable(t2) != nil {
		t.Fatal(err)
	}
	clk.advance(10 * time.Second) // short expires
	if n, err := db.SweepExpired(); err != nil || n != 2 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	if _, err := c.Rollback("s"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(gone); !errors.Is(err, ErrNoMemory) {
		t.Fatalf("expired before the snapshot, back after it: %v", err)
	}
	if ttl, ok, err := c.TTL(ByID(long)); err != nil || !ok || ttl != 88*time.Second {
		t.Fatalf("TTL of the persisted memory after rollback: %v %v %v, want 88s", ttl, ok, err)
	}
	// short came back with its past expiry: gone to readers, swept again.
	if _, err := c.Get(short); !errors.Is(err, ErrNoMemory) {
		t.Fatalf("memory whose restored expiry is past: %v", err)
	}
	if n, err := db.SweepExpired(); err != nil || n != 1 {
		t.Fatalf("second sweep: %d %v", n, err)
	}
}
