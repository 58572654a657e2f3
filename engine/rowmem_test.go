package engine

import (
	"math/rand"
	"testing"

	"github.com/memrl/memrl/vfs"
	"github.com/memrl/memrl/wal"
)

// TestSmallCollectionRowMemory (issue 26): a small collection's resident
// rows cost about what they hold, loaded and after a restart, not a 2 MiB
// huge page each; a collection whose rows fill a huge page still gets
// huge pages.
func TestSmallCollectionRowMemory(t *testing.T) {
	const dim, n = 16, 300
	opts := Options{Sync: wal.SyncNone, CheckpointInterval: -1}
	db, dir := openTemp(t, opts)
	c := mustColl(t, db, "small", Config{Dim: dim, Metric: L2})
	rng := rand.New(rand.NewSource(1))
	v := make([]float32, dim)
	for i := 0; i < n; i++ {
		for j := range v {
			v[j] = rng.Float32()
		}
		add(t, c, uint64(i+1), 0, v...)
	}
	rowBytes := int64(n) * dim * 4
	check := func(when string, c *Collection) {
		t.Helper()
		c.mu.RLock()
		defer c.mu.RUnlock()
		if !c.vecs.resident {
			t.Fatalf("%s: rows not resident", when)
		}
		held := int64(cap(c.vecs.mem.b))
		if held >= vfs.HugePage || held > smallReserveAhead*rowBytes {
			t.Fatalf("%s: %d bytes hold %d bytes of rows; want under a huge page and at most %d×", when, held, rowBytes, smallReserveAhead)
		}
		if got := c.vecs.row(n - 1)[0]; got != v[0] {
			t.Fatalf("%s: last row reads %v, want %v", when, got, v[0])
		}
	}
	check("loaded", c)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	opts.Logf = t.Logf
	db2, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	c2, err := db2.Collection("small")
	if err != nil {
		t.Fatal(err)
	}
	check("reopened", c2)

	// Rows that fill a huge page are worth huge pages.
	s := c2.vecs
	c2.mu.Lock()
	err = s.reserve(uint32(vfs.HugePage/s.rowSize) + 1)
	c2.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if got := len(s.mem.b); got < vfs.HugePage || got%vfs.HugePage != 0 {
		t.Fatalf("a huge page of rows reserved %d bytes, want whole huge pages", got)
	}
}
