package engine

import (
	"math/rand"
	"strconv"
	"testing"

	"github.com/memrl/memrl/wal"
)

// measureDataMemory computes a collection's DataMemory afresh, walking
// every memory, attribute and history: what the kept figures must equal.
func measureDataMemory(t *testing.T, c *Collection) DataMemory {
	t.Helper()
	c.mu.RLock()
	defer c.mu.RUnlock()
	m := DataMemory{
		Vectors: c.vecs.memBytes(),
		Records: recordBytes(c),
	}
	if c.ivf != nil {
		m.Index = c.ivf.Bytes()
	}
	for _, mem := range c.mems {
		m.Attrs += attrCost(mem.attrs())
	}
	if c.fidx != nil && len(c.indexed) > 0 {
		m.AttrIndex = int64(c.fidx.SizeInBytes()) // kept exact by the filter (TestIndexSizeFollowsChanges)
	}
	m.History = c.HistoryMemory().Bytes
	return m
}

// TestDataMemoryAccounting (issue 26): DataMemory, read in O(1) from
// counters each write keeps, accounts for the vectors, records, the IVF-PQ
// index, attributes, the attribute index and history, equals a walk of
// all of them through adds, rewards, attribute changes, deletes, an index
// build and a reopen, and a dropped collection leaves the sums.
func TestDataMemoryAccounting(t *testing.T) {
	const dim, n = 16, 600
	opts := Options{Sync: wal.SyncNone, CheckpointInterval: -1}
	db, dir := openTemp(t, opts)
	if got := db.DataMemory(); got != (DataMemory{}) {
		t.Fatalf("empty database: %+v", got)
	}
	c := mustColl(t, db, "a", Config{Dim: dim, Metric: L2, Indexed: []string{"tags"},
		Index: IndexConfig{Kind: IndexIVFPQ, TrainThreshold: 256}})
	other := mustColl(t, db, "b", Config{Dim: dim, Metric: L2})
	rng := rand.New(rand.NewSource(2))
	vec := func() []float32 {
		v := make([]float32, dim)
		for i := range v {
			v[i] = rng.Float32()
		}
		return v
	}
	for i := 0; i < n; i++ {
		attrs := []byte(`{"tags":["t` + strconv.Itoa(i) + `","all"],"n":` + strconv.Itoa(i) + `}`)
		if _, err := c.Add(AddRequest{Vector: vec(), Attrs: attrs}); err != nil {
			t.Fatal(err)
		}
		add(t, other, uint64(i+1), 0, vec()...)
	}
	waitIndexed(t, c)
	c.bg.Wait()
	for id := uint64(1); id <= 100; id++ {
		if _, err := c.Reward(1, []uint64{id, n + 1 - id}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.SetAttrs(ByID(7), []byte(`{"tags":["x","y","z"]}`)); err != nil {
		t.Fatal(err)
	}
	check := func(when string, db *DB, c *Collection) {
		t.Helper()
		got, want := c.DataMemory(), measureDataMemory(t, c)
		if got != want {
			t.Fatalf("%s: kept %+v, measured %+v", when, got, want)
		}
		if got.Vectors < n*dim*4 || got.Records == 0 || got.Attrs == 0 || got.AttrIndex == 0 || got.History == 0 {
			t.Fatalf("%s: a kind missing: %+v", when, got)
		}
		if when != "reopened" && got.Index == 0 { // a reopen may still be loading it
			t.Fatalf("%s: no index: %+v", when, got)
		}
		oc, err := db.Collection("b")
		if err != nil {
			t.Fatal(err)
		}
		if sum := got.Total() + oc.DataMemory().Total(); db.DataMemory().Total() != sum {
			t.Fatalf("%s: database total %d, collections %d", when, db.DataMemory().Total(), sum)
		}
	}
	check("written", db, c)
	before := c.DataMemory()
	ids := make([]uint64, 0, n/2)
	for id := uint64(1); id <= n/2; id++ {
		ids = append(ids, id)
	}
	if _, err := c.Delete(ids); err != nil {
		t.Fatal(err)
	}
	after := c.DataMemory()
	if after.Records >= before.Records || after.Attrs >= before.Attrs || after.AttrIndex >= before.AttrIndex || after.History >= before.History {
		t.Fatalf("deletes freed nothing: before %+v, after %+v", before, after)
	}
	check("deleted", db, c)

	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if got := db.DataMemory(); got != (DataMemory{}) {
		t.Fatalf("closed database: %+v", got)
	}
	opts.Logf = t.Logf
	db2, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	c2, err := db2.Collection("a")
	if err != nil {
		t.Fatal(err)
	}
	check("reopened", db2, c2)
	b2, _ := db2.Collection("b")
	if err := db2.Drop("a"); err != nil {
		t.Fatal(err)
	}
	if got, want := db2.DataMemory(), b2.DataMemory(); got != want {
		t.Fatalf("after the drop the database holds %+v, its one collection %+v", got, want)
	}
}
