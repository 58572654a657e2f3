package engine

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/memrl/memrl/vfs"
	"github.com/memrl/memrl/wal"
)

// The maintenance features meet here: snapshots pin deleted memories,
// compaction moves the rows they pin, and a rollback must bring them back
// from wherever compaction put them, also across restarts and a crash in
// the middle of the compaction.

// maintSetup fills a collection on db, takes snapshot "s" and returns the
// state it holds; then it deletes about half the memories and prunes some
// more, and returns the state after that as well.
func maintSetup(t *testing.T, db *DB) (c *Collection, atSnap, after map[uint64]memState) {
	t.Helper()
	c = mustColl(t, db, "m", NewConfig(4))
	rng := rand.New(rand.NewSource(42))
	for i := range 120 {
		req := AddRequest{Vector: snapVec(rng), Payload: []byte(fmt.Sprintf("p%d", i))}
		if i%3 == 0 {
			req.Attrs = []byte(fmt.Sprintf(`{"n":%d}`, i))
			req.Key = fmt.Sprintf("k%d", i)
		}
		if _, err := c.Add(req); err != nil {
			t.Fatal(err)
		}
	}
	for id := uint64(1); id <= 120; id += 4 {
		if _, err := c.Reward(float64(id%3)-1, []uint64{id}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Snapshot("s"); err != nil {
		t.Fatal(err)
	}
	atSnap = collState(t, c)
	var del []uint64
	for id := uint64(1); id <= 120; id++ {
		if rng.Intn(2) == 0 {
			del = append(del, id)
		}
	}
	if _, err := c.Delete(del); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Prune(PruneOptions{QBelow: -0.05, HasQBelow: true}); err != nil {
		t.Fatal(err)
	}
	for id := uint64(200); id < 210; id++ { // added after the snapshot
		if _, err := c.Add(AddRequest{Vector: snapVec(rng), ID: id, HasID: true}); err != nil {
			t.Fatal(err)
		}
	}
	// Deleted memories no snapshot holds: compaction reclaims their rows.
	if _, err := c.Delete([]uint64{200, 201, 202, 203, 204}); err != nil {
		t.Fatal(err)
	}
	after = collState(t, c)
	if len(after) >= len(atSnap) {
		t.Fatalf("setup: %d memories after the deletes, %d at the snapshot", len(after), len(atSnap))
	}
	return c, atSnap, after
}

func TestRollbackAfterCompactionAndRestart(t *testing.T) {
	fs := vfs.NewMemFS()
	db, err := Open("/db", crashOpts(fs))
	if err != nil {
		t.Fatal(err)
	}
	c, atSnap, after := maintSetup(t, db)
	st, err := c.Compact()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("compaction: %+v", st)
	if st.RowsAfter != st.RowsBefore-5 {
		t.Fatalf("compaction kept %d of %d rows; want all but the 5 no snapshot holds", st.RowsAfter, st.RowsBefore)
	}
	if d := diffState(after, collState(t, c)); d != "" {
		t.Fatalf("after the compaction: %s", d)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if db, err = Open("/db", crashOpts(fs)); err != nil {
		t.Fatal(err)
	}
	c, _ = db.Collection("m")
	if d := diffState(after, collState(t, c)); d != "" {
		t.Fatalf("after the compaction and a restart (deleted memories must stay gone): %s", d)
	}
	if _, err := c.Rollback("s"); err != nil {
		t.Fatal(err)
	}
	if d := diffState(atSnap, collState(t, c)); d != "" {
		t.Fatalf("rollback after compaction: %s", d)
	}
	// Compact again (nothing the snapshot holds may go), restart, and the
	// rolled-back state holds.
	if _, err := c.Compact(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if db, err = Open("/db", crashOpts(fs)); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, _ = db.Collection("m")
	if d := diffState(atSnap, collState(t, c)); d != "" {
		t.Fatalf("after the rollback, a compaction and a restart: %s", d)
	}
}

// TestRollbackAfterCrashDuringCompaction crashes at every k-th file
// operation of a compaction of a collection whose snapshot pins deleted
// memories: recovery holds the state before the rollback (no deleted
// memory back), and the rollback then restores the snapshot exactly.
func TestRollbackAfterCrashDuringCompaction(t *testing.T) {
	old := compactChunk
	compactChunk = 8
	defer func() { compactChunk = old }()

	// Count the compaction's file operations.
	fs := vfs.NewMemFS()
	db, err := Open("/db", crashOpts(fs))
	if err != nil {
		t.Fatal(err)
	}
	c, _, _ := maintSetup(t, db)
	fs.PowerOffAt(0)
	if _, err := c.Compact(); err != nil {
		t.Fatal(err)
	}
	ops := fs.MutatingOps()
	db.Close()
	step := max(ops/60, 1)
	if testing.Short() {
		step = max(ops/8, 1)
	}
	for k := int64(1); k <= ops+1; k += step {
		for _, mode := range []vfs.CrashMode{vfs.DropUnsynced, vfs.KeepRandomPrefix} {
			fs := vfs.NewMemFS()
			db, err := Open("/db", crashOpts(fs))
			if err != nil {
				t.Fatal(err)
			}
			c, atSnap, after := maintSetup(t, db)
			fs.PowerOffAt(k)
			_, cerr := c.Compact()
			db.Close()
			what := fmt.Sprintf("power off at op %d of %d, %v (compaction: %v)", k, ops, mode, cerr)
			crashed := fs.Crash(mode, rand.New(rand.NewSource(k)))
			db2, err := Open("/db", crashOpts(crashed))
			if err != nil {
				t.Fatalf("%s: recovery: %v", what, err)
			}
			c2, _ := db2.Collection("m")
			if d := diffState(after, collState(t, c2)); d != "" {
				db2.Close()
				t.Fatalf("%s: recovered state: %s", what, d)
			}
			if _, err := c2.Rollback("s"); err != nil {
				db2.Close()
				t.Fatalf("%s: rollback: %v", what, err)
			}
			if d := diffState(atSnap, collState(t, c2)); d != "" {
				db2.Close()
				t.Fatalf("%s: after the rollback: %s", what, d)
			}
			if err := db2.Close(); err != nil {
				t.Fatalf("%s: close: %v", what, err)
			}
			db3, err := Open("/db", crashOpts(crashed))
			if err != nil {
				t.Fatalf("%s: reopen: %v", what, err)
			}
			c3, _ := db3.Collection("m")
			if d := diffState(atSnap, collState(t, c3)); d != "" {
				db3.Close()
				t.Fatalf("%s: after the rollback and a restart: %s", what, d)
			}
			db3.Close()
		}
	}
}

// TestRollbackThroughCompactedIndex: the IVF-PQ lists are remapped by a
// compaction while a snapshot pins deleted memories; after a restart and
// a rollback, the revived memories are found through the index again.
func TestRollbackThroughCompactedIndex(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Dim: 32, Metric: L2, Alpha: 0.3, Index: IndexConfig{NList: 16, TrainThreshold: 2000}}
	opts := Options{Sync: wal.SyncNone, CheckpointInterval: -1, CompactShare: -1, Logf: t.Logf}
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { db.Close() }()
	c := mustColl(t, db, "ix", cfg)
	rng := rand.New(rand.NewSource(5))
	vecs, deleted, _ := snapshotThenDelete(t, c, rng, 3)
	// Memories added after the snapshot and deleted: compaction drops them.
	for i := range 100 {
		id, err := c.Add(AddRequest{Vector: clustered(rng, 1, 32)[0]})
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			if _, err := c.Delete([]uint64{id}); err != nil {
				t.Fatal(err)
			}
		} else {
			vecs[id] = nil // live, not in the snapshot: the rollback removes it
		}
	}
	if _, err := c.Compact(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if db, err = Open(dir, opts); err != nil {
		t.Fatal(err)
	}
	c, _ = db.Collection("ix")
	for id, v := range vecs {
		if v == nil {
			delete(vecs, id)
		}
	}
	if r := recallAt1(t, c, vecs, deleted); r < 0.95 { // fails if a deleted memory is retrieved
		t.Fatalf("recall@1 after compaction and restart %.3f", r)
	}
	if _, err := c.Rollback("s"); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Count(); n != 2500 {
		t.Fatalf("%d memories after the rollback, want 2500", n)
	}
	if r := recallAt1(t, c, vecs, nil); r < 0.95 {
		t.Fatalf("recall@1 after the rollback %.3f", r)
	}
}
