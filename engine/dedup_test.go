package engine

import (
	"errors"
	"testing"

	"github.com/memrl/memrl/vfs"
)

// TestAddDedup: an add with DEDUP returns the existing memory at least
// that similar instead of adding a near-copy, merges Q as asked (and the
// merge survives a restart), adds when nothing is that similar, ignores
// expired memories, and is refused in batches.
func TestAddDedup(t *testing.T) {
	fs := vfs.NewMemFS()
	db, err := Open("/db", crashOpts(fs))
	if err != nil {
		t.Fatal(err)
	}
	cfg := NewConfig(2)
	cfg.Metric = L2
	if err := db.Create("c", cfg); err != nil {
		t.Fatal(err)
	}
	c, _ := db.Collection("c")
	q := func(v float64) *float64 { return &v }
	add := func(req AddRequest) uint64 {
		t.Helper()
		id, err := c.Add(req)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	a := add(AddRequest{Vector: []float32{0, 0}, Q: 0.2, HasQ: true})
	b := add(AddRequest{Vector: []float32{10, 0}})
	// L2 similarity is minus the squared distance: 0.01 away is -0.0001.
	if id := add(AddRequest{Vector: []float32{0.01, 0}, Dedup: -0.001, HasDedup: true, Q: *q(0.9), HasQ: true}); id != a {
		t.Fatalf("near-copy of a: got id %d, want %d", id, a)
	}
	if n, _ := c.Count(); n != 2 {
		t.Fatalf("a deduplicated add added: %d memories", n)
	}
	if mi, _ := c.Get(a); mi.Q != 0.2 {
		t.Fatalf("MERGE KEEP changed Q to %v", mi.Q)
	}
	add(AddRequest{Vector: []float32{0.01, 0}, Dedup: -0.001, HasDedup: true, Q: 0.9, HasQ: true, DedupMerge: DedupMax})
	if mi, _ := c.Get(a); mi.Q != 0.9 {
		t.Fatalf("MERGE MAX: Q %v, want 0.9", mi.Q)
	}
	add(AddRequest{Vector: []float32{0, 0.01}, Dedup: -0.001, HasDedup: true, Q: 0.1, HasQ: true, DedupMerge: DedupAvg})
	if mi, _ := c.Get(a); mi.Q != 0.5 {
		t.Fatalf("MERGE AVG: Q %v, want 0.5", mi.Q)
	}
	// Not similar enough: added.
	if id := add(AddRequest{Vector: []float32{1, 0}, Dedup: -0.5, HasDedup: true}); id == a || id == b {
		t.Fatalf("an add 1 away with DEDUP -0.5 returned %d", id)
	}
	if _, err := c.AddBatch([]AddRequest{{Vector: []float32{5, 5}}, {Vector: []float32{5, 5}, Dedup: -1, HasDedup: true}}); !errors.Is(err, ErrBadParam) {
		t.Fatalf("a batch with DEDUP: %v, want ErrBadParam", err)
	}
	if _, err := c.AddBatch([]AddRequest{{Vector: []float32{5, 5}, Dedup: -1, HasDedup: true}}); !errors.Is(err, ErrBadParam) {
		t.Fatalf("a batch of one with DEDUP: %v, want ErrBadParam as for larger batches", err)
	}
	// The merged Q survives a restart.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if db, err = Open("/db", crashOpts(fs)); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, _ = db.Collection("c")
	if mi, _ := c.Get(a); mi.Q != 0.5 {
		t.Fatalf("merged Q after a restart: %v, want 0.5", mi.Q)
	}
	if n, _ := c.Count(); n != 3 {
		t.Fatalf("%d memories after a restart, want 3", n)
	}
}
