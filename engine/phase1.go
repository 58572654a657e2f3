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
//
// Phase 1 returns the K1 most similar live rows that are in Allow (when
// set), that Match accepts (when set) and whose similarity is at least
// Delta (when HasDelta): never fewer because filtering happened after a
// global top K1; fewer only when the collection holds no more such rows.
// See "Filtered search" in doc.go for how.
type SearchOptions struct {
	K1       int     // candidates wanted
	Delta    float64 // similarity threshold, used when HasDelta
	HasDelta bool
	NProbe   int // IVF lists probed first (more when widening); <= 0 means the index's default
	Refine   int // IVF re-rank factor; <= 0 means the index's default
	// Stop is the IVF index's early-stop factor (STOP;
	// ivfpq.SearchParams.PruneFactor): a probed list is skipped when a
	// lower bound on its rows' distance exceeds Stop times the K1-th
	// distance found so far. In (0, 1]: 1 skips only lists that provably
	// hold none of the K1 nearest, smaller values stop earlier; 0 means
	// ivfpq.DefaultPruneFactor.
	Stop float64

	// Allow, when non-nil, holds the rows of the vector file that may be
	// returned (the caller's filter, resolved through its attribute
	// index); nil means every live row. Rows that are dead or past the
	// file are ignored. The caller must not modify it during the call.
	Allow *roaring.Bitmap
	// Match, when non-nil, is a residual check a row must pass (how
	// filter fields without an index are evaluated). It is called only
	// for live, allowed rows good enough to enter the candidates, at most
	// once per row and call, with the collection's read lock held: it may
	// read the collection's state but must not call its methods.
	Match func(row uint32) bool
	// Path forces the exact or the index path; PathAuto (the zero value)
	// chooses by cost. For benchmarks and tests.
	Path SearchPath
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
	rows := e.c.vecs.rows()
	if opt.Allow != nil && iterateAllowed(opt.Allow.GetCardinality(), len(rows)/e.c.dim()) {
		return exactSearchAllowed(rows, e.c.dim(), e.c.cfg.Metric, e.c.dead, opt.Allow, q, opt), nil
	}
	return exactSearch(rows, e.c.dim(), e.c.cfg.Metric, e.c.dead, q, opt), nil
}

// iterateAllowed reports whether an exact search over n rows is cheaper
// scoring only the allowed rows one by one (exactSearchAllowed) than
// scoring every row in batches and checking Allow for the rows good enough
// to enter the heap (exactSearch).
func iterateAllowed(allowed uint64, n int) bool {
	return float64(allowed)*exactNsPerDim <= float64(n)*scanNsPerDim
}

// exactSearch scans rows (n*dim values) for the K1 most similar rows not in
// dead, in opt.Allow (when set) and accepted by opt.Match (when set) whose
// similarity is at least opt.Delta (when set), best first.
func exactSearch(rows []float32, dim int, metric Metric, dead *roaring.Bitmap, q []float32, opt SearchOptions) []candidate {
	n := len(rows) / dim
	if opt.K1 <= 0 || n == 0 {
		return nil
	}
	h := make(minHeap, 0, opt.K1)
	exactSearchRange(&h, rows, dim, metric, dead, q, opt, 0, n)
	out := []candidate(h)
	sortCandidates(out)
	return out
}

// exactSearchRange is exactSearch over rows [lo, hi) of rows (n*dim
// values, hi <= n), keeping the best in h (at most opt.K1, K1 > 0): a scan
// split into ranges, each with the h the previous one left, keeps what one
// scan of the whole would.
func exactSearchRange(h *minHeap, rows []float32, dim int, metric Metric, dead *roaring.Bitmap, q []float32, opt SearchOptions, lo, hi int) {
	k := opt.K1
	floor := float32(math.Inf(-1))
	if opt.HasDelta {
		floor = float32(opt.Delta)
	}
	filtered := opt.filtered()
	var scores [scanBatch]float32
	for start := lo; start < hi; start += scanBatch {
		end := min(start+scanBatch, hi)
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
			if s < floor || (len(*h) == k && s <= (*h)[0].sim) {
				continue
			}
			// The tombstone and filter checks run only for rows that would
			// enter the heap, which after the first few batches is a small
			// share (unless few rows pass the filter: then the scan goes on
			// checking, and finds them all).
			row := uint32(start + i)
			if dead.Contains(row) || filtered && !opt.keepRow(row) {
				continue
			}
			if len(*h) < k {
				heap.Push(h, candidate{row, s})
			} else {
				(*h)[0] = candidate{row, s}
				heap.Fix(h, 0)
			}
		}
	}
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
