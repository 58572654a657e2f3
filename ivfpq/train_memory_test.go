package ivfpq

import (
	"runtime"
	"testing"
)

// totalAlloc returns the bytes fn allocates (cumulatively: an upper bound
// on what it holds at once).
func totalAlloc(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestTrainAllocatesLessThanItsSample (issue 14): training once allocated
// several copies of its sample (a residual copy as large as the sample,
// per-worker k-means sums of NList·Dim float64 each, a copy of every
// sub-space), so memory grew as n × dim × ~4. Now everything Train
// allocates, apart from the index's own centroids and codebooks, is at most
// the sample's size: the residuals are formed one sub-space at a time.
func TestTrainAllocatesLessThanItsSample(t *testing.T) {
	const n, dim = 1500, 1024
	sample := clustered(n, dim, 20, 5)
	p := Params{Dim: dim, NList: 16, M: 64, Bits: 8, Metric: L2}
	var ix *Index
	var err error
	got := totalAlloc(func() { ix, err = Train(p, sample, 4, 1) })
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	sampleBytes := uint64(4 * len(sample))
	own := uint64(4 * (len(ix.coarse) + len(ix.book)))
	limit := sampleBytes + own + 1<<20
	t.Logf("Train of a %d MiB sample allocated %.1f MiB (centroids and codebooks %.1f MiB; limit %.1f MiB)",
		sampleBytes>>20, float64(got)/(1<<20), float64(own)/(1<<20), float64(limit)/(1<<20))
	if got > limit {
		t.Fatalf("Train allocated %d bytes, more than its %d-byte sample + %d bytes of centroids and codebooks + 1 MiB", got, sampleBytes, own)
	}
	// And the index it trained still finds the vectors it was trained on.
	if err := ix.AddBatch(0, sample, 2); err != nil {
		t.Fatal(err)
	}
	hits := 0
	for i := 0; i < 100; i++ {
		res, err := ix.Search(sample[i*dim:(i+1)*dim], 1, SearchParams{NProbe: 4}, nil, sliceSource{sample, dim})
		if err != nil {
			t.Fatal(err)
		}
		if len(res) == 1 && res[0].Row == uint32(i) {
			hits++
		}
	}
	if hits < 95 {
		t.Fatalf("recall@1 %d/100 after training", hits)
	}
}
