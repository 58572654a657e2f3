package engine

import (
	"container/heap"
	"math"
	"sort"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/memrl/memrl/simd"
)

// candidate is a phase-1 result: a row of the vector file and its similarity
// to the query.
type candidate struct {
	row uint32
	sim float32
}

// SearchOptions are the phase-1 knobs of one retrieval.
type SearchOptions struct {
	K1       int     // candidates wanted
	Delta    float64 // similarity threshold, used when HasDelta
	HasDelta bool
	NProbe   int // IVF lists probed; <= 0 means the index's default
	Refine   int // IVF re-rank factor; <= 0 means the index's default
}

// phase1 is semantic recall: the k most similar live rows to a query. The
// exact scan below implements it; the IVF-PQ index plugs in here too.
//
// REQUIRES: the collection's lock held at least for reading.
type phase1 interface {
	search(q []float32, opt SearchOptions) ([]candidate, error)
}

// exactScan is brute-force phase 1 over every live row of the vector file.
type exactScan struct {
	c *Collection
}

// scanBatch is how many rows one batched kernel call scores: enough to
// amortise the call, few enough that the scores stay in L1.
const scanBatch = 256

func (e exactScan) search(q []float32, opt SearchOptions) ([]candidate, error) {
	return exactSearch(e.c.vecs.rows(), e.c.dim(), e.c.cfg.Metric, e.c.dead, q, opt), nil
}

// exactSearch scans rows (n*dim values) for the K1 most similar rows not in
// dead whose similarity is at least opt.Delta (when set), best first.
func exactSearch(rows []float32, dim int, metric Metric, dead *roaring.Bitmap, q []float32, opt SearchOptions) []candidate {
	n := len(rows) / dim
	k := opt.K1
	if k <= 0 || n == 0 {
		return nil
	}
	floor := float32(math.Inf(-1))
	if opt.HasDelta {
		floor = float32(opt.Delta)
	}
	h := make(minHeap, 0, k)
	var scores [scanBatch]float32
	for start := 0; start < n; start += scanBatch {
		end := min(start+scanBatch, n)
		out := scores[:end-start]
		block := rows[start*dim : end*dim]
		if metric == L2 {
			simd.L2SqBatch(q, block, out)
			for i := range out {
				out[i] = -out[i]
			}
		} else {
			simd.DotBatch(q, block, out)
		}
		for i, s := range out {
			if s < floor || (len(h) == k && s <= h[0].sim) {
				continue
			}
			// The tombstone check runs only for rows that would enter the
			// heap, which after the first few batches is a small share.
			row := uint32(start + i)
			if dead.Contains(row) {
				continue
			}
			if len(h) < k {
				heap.Push(&h, candidate{row, s})
			} else {
				h[0] = candidate{row, s}
				heap.Fix(&h, 0)
			}
		}
	}
	out := []candidate(h)
	sortCandidates(out)
	return out
}

// sortCandidates orders by similarity, best first, ties by row.
func sortCandidates(c []candidate) {
	sort.Slice(c, func(i, j int) bool {
		if c[i].sim != c[j].sim {
			return c[i].sim > c[j].sim
		}
		return c[i].row < c[j].row
	})
}

// minHeap keeps the k best candidates with the worst at the root.
type minHeap []candidate

func (h minHeap) Len() int { return len(h) }
func (h minHeap) Less(i, j int) bool {
	if h[i].sim != h[j].sim {
		return h[i].sim < h[j].sim
	}
	return h[i].row > h[j].row
}
func (h minHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *minHeap) Push(x any)   { *h = append(*h, x.(candidate)) }
func (h *minHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
