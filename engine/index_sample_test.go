package engine

import (
	"errors"
	"fmt"
	"math/rand"
	"testing"

	"github.com/memrl/memrl/wal"
)

// TestIndexSampleReleasesTheLock checks that the build's training sample
// is copied in chunks with the collection's lock released between them
// (a writer can take it there, so no writer, and no reader queued behind
// one, waits for the whole copy), that it holds only live vectors (limit
// of them picked at random, or every live one when there are no more),
// and that it stops with errCompacted when the rows move in between.
func TestIndexSampleReleasesTheLock(t *testing.T) {
	defer func(n int) { sampleChunk, afterSampleChunk = n, nil }(sampleChunk)
	sampleChunk = 100
	db, _ := openTemp(t, Options{Sync: wal.SyncNone})
	c := mustColl(t, db, "s", Config{Dim: 8, Metric: L2, Index: IndexConfig{Kind: IndexFlat}})
	live := map[string]int{} // vector -> how many live memories hold it
	var ids []uint64
	for _, v := range clustered(rand.New(rand.NewSource(1)), 3000, 8) {
		id, err := c.Add(AddRequest{Vector: v})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		live[fmt.Sprint(v)]++
	}
	for i := 0; i < len(ids); i += 10 {
		mi, err := c.Get(ids[i])
		if err != nil {
			t.Fatal(err)
		}
		v := mi.Vector
		if _, err := c.Delete([]uint64{ids[i]}); err != nil {
			t.Fatal(err)
		}
		live[fmt.Sprint(v)]--
	}
	chunks := 0
	afterSampleChunk = func() {
		chunks++
		if !c.mu.TryLock() {
			t.Error("the collection's lock is held between the sample's chunks")
			return
		}
		c.mu.Unlock()
	}
	for _, limit := range []int{1000, 5000} {
		chunks = 0
		out, err := c.sample(rand.New(rand.NewSource(2)), limit)
		if err != nil {
			t.Fatal(err)
		}
		want := min(limit, 2700)
		if len(out) != want*8 || chunks != (want+sampleChunk-1)/sampleChunk {
			t.Fatalf("limit %d: %d vectors in %d chunks, want %d in %d", limit, len(out)/8, chunks, want, (want+sampleChunk-1)/sampleChunk)
		}
		seen := map[string]int{}
		for i := 0; i < want; i++ {
			k := fmt.Sprint(out[i*8 : (i+1)*8])
			if live[k] == 0 {
				t.Fatalf("limit %d: sampled vector %s is no live memory's", limit, k)
			}
			seen[k]++
		}
		if limit > 2700 { // every live vector, each once
			for k, n := range live {
				if seen[k] != n {
					t.Fatalf("sample of all: vector %s %d times, want %d", k, seen[k], n)
				}
			}
		}
	}
	// Rows moved (as a compaction's swap does) between chunks: the sample
	// stops rather than mix two generations' rows.
	afterSampleChunk = func() {
		c.mu.Lock()
		c.gen++
		c.mu.Unlock()
	}
	if _, err := c.sample(rand.New(rand.NewSource(3)), 1000); !errors.Is(err, errCompacted) {
		t.Fatalf("sample across a generation change: %v, want errCompacted", err)
	}
	c.mu.Lock()
	c.gen--
	c.mu.Unlock()
}
