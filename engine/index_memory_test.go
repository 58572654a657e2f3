package engine

import (
	"errors"
	"math/rand"
	"runtime"
	"strings"
	"testing"

	"github.com/memrl/memrl/vfs"
	"github.com/memrl/memrl/wal"
)

// TestIndexBuildMemoryIsBounded (issue 14): MEM.CREATE c DIM 65536 with
// 3,000 vectors passed 4 GB while training its index, and would have needed
// more than 10 GB at the default threshold: the training sample was bounded
// in rows (256 per list), not bytes, training copied it several times over,
// and the build copied rows out in chunks of 65,536 whatever the dimension.
//
// The test scales the budgets down (a real 256 MiB sample would make it too
// slow for CI): with the sample capped at 8 MiB and the chunks at 4 MiB, a
// build over 24 MiB of vectors of dimension 4096 allocates (cumulatively,
// so this bounds its peak too) no more than twice the sample plus a chunk
// plus twice the index it produces, and the index then serves retrievals.
func TestIndexBuildMemoryIsBounded(t *testing.T) {
	defer func(s, c int) { trainSampleBytes, buildChunkBytes = s, c }(trainSampleBytes, buildChunkBytes)
	trainSampleBytes, buildChunkBytes = 8<<20, 4<<20
	const dim, n = 4096, 3000

	db, _ := openTemp(t, Options{FS: vfs.NewMemFS(), Sync: wal.SyncNone, CheckpointInterval: -1})
	// TRAIN at its maximum: the build runs when the test calls it.
	c := mustColl(t, db, "big", Config{Dim: dim, Metric: L2, Index: IndexConfig{TrainThreshold: MaxTrainThreshold}})
	rng := rand.New(rand.NewSource(3))
	vecs := map[uint64][]float32{}
	for i, v := range clustered(rng, n, dim) {
		id := uint64(i + 1)
		add(t, c, id, 0, v...)
		if i%15 == 0 {
			vecs[id] = v
		}
	}

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	// The build starts a background save of the new index when it is done.
	// On vfs.MemFS that save keeps copies of the file's bytes in the test's
	// heap, which would count as the build's: mark a save as running so the
	// build starts none while it is measured.
	c.mu.Lock()
	c.building, c.saving = true, true
	c.mu.Unlock()
	c.build()
	runtime.ReadMemStats(&after)
	got := after.TotalAlloc - before.TotalAlloc
	c.mu.Lock()
	c.saving = false
	c.mu.Unlock()

	info, err := c.Info()
	if err != nil {
		t.Fatal(err)
	}
	c.mu.RLock()
	ix := c.ivf
	c.mu.RUnlock()
	if ix == nil {
		t.Fatalf("no index after the build (index %q)", info.Index)
	}
	// Twice the index: its lists, and the codes each step encodes before
	// it appends them.
	limit := uint64(2*trainSampleBytes+buildChunkBytes) + 2*uint64(ix.Bytes()) + 1<<20
	t.Logf("build over %d MiB of vectors allocated %.1f MiB (index %s, %.1f MiB; limit %.1f MiB)",
		n*dim*4>>20, float64(got)/(1<<20), info.Index, float64(ix.Bytes())/(1<<20), float64(limit)/(1<<20))
	if got > limit {
		t.Fatalf("the build allocated %d bytes, more than twice the %d-byte sample budget + a %d-byte chunk + twice the %d-byte index + 1 MiB",
			got, trainSampleBytes, buildChunkBytes, ix.Bytes())
	}
	if p := ix.Params(); 39*p.NList > trainSampleBytes/(4*dim) {
		t.Fatalf("default NLIST %d: fewer than 39 training vectors a list in a %d-vector sample", p.NList, trainSampleBytes/(4*dim))
	}
	if r := recallAt1(t, c, vecs, nil); r < 0.95 {
		t.Fatalf("recall@1 %.2f through the index", r)
	}
}

// TestNListFitsTheTrainingBudget: an explicit NLIST needs 39 training
// vectors a list within TrainSampleBytes, so a large one at a large
// dimension is refused at create instead of failing (or blowing up) when
// the index trains.
func TestNListFitsTheTrainingBudget(t *testing.T) {
	for _, tc := range []struct{ dim, nlist int }{{65536, 26}, {768, 2240}, {128, 13443}} {
		cfg := Config{Dim: tc.dim, Index: IndexConfig{NList: tc.nlist}}
		if err := cfg.Validate(); err != nil {
			t.Errorf("DIM %d NLIST %d: %v", tc.dim, tc.nlist, err)
		}
		cfg.Index.NList++
		if err := cfg.Validate(); !errors.Is(err, ErrBadParam) || !strings.Contains(err.Error(), "NLIST") {
			t.Errorf("DIM %d NLIST %d: %v, want ErrBadParam", tc.dim, tc.nlist+1, err)
		}
	}
}
