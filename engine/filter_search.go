package engine

import (
	"container/heap"
	"math"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/memrl/memrl/ivfpq"
	"github.com/memrl/memrl/simd"
)

// Filtered phase 1: SearchOptions.Allow and SearchOptions.Match (see the
// "Filtered search" section of doc.go for the rule and its measurements).

// SearchPath forces how phase 1 runs. The zero value lets the collection
// choose; the others exist for benchmarks and tests, which must compare the
// two paths on the same collection.
type SearchPath int

const (
	// PathAuto picks by estimated cost (filteredPath).
	PathAuto SearchPath = iota
	// PathExact scans exactly: the allowed rows when Allow is set, else
	// every row.
	PathExact
	// PathIndex searches the IVF-PQ index when the collection has one
	// (exactly otherwise), widening until K1 rows pass.
	PathIndex
)

// Cost model of the path choice, in nanoseconds per unit. Their ratios
// were measured (only ratios matter: the choice compares two estimates),
// their scale set near the unloaded machine's: on sift1m-deb (1M × 128,
// IVF4096,PQ32x8) `memrl bench filter --crossover` timed the exact path
// against the index path by selectivity (doc.go, "Filtered search"); an
// allowed row's exact similarity cost 1.3–1.8 times a code byte's
// approximate score, per dimension, at 1–10% allowed (0.8 at 5%, a noisy
// point); BenchmarkExactAllowed timed scoring the allowed rows one by one
// against the batched full scan, 1–3 times a full-scan row per row at
// 10–40% allowed. The machine was shared with other builds throughout, so
// absolute times were 5–10 times these; both paths slowed alike.
const (
	// exactNsPerDim is an allowed row's exact similarity, per dimension,
	// when rows are read one by one (bitmap order: a random read each),
	// including the bitmap iteration's share. Re-ranking reads rows the
	// same way.
	exactNsPerDim = 0.8
	// codeNsPerByte is a probed code's approximate score, per code byte,
	// including its share of the heap and bitmap checks.
	codeNsPerByte = 0.6
	// scanNsPerDim is a row's similarity in a batched sequential scan, per
	// dimension: the full exact scan (exactSearch) and the coarse step's
	// scan of the centroids.
	scanNsPerDim = 0.4
)

// keepRow reports whether row, not dead, passes opt's Allow and Match.
func (opt *SearchOptions) keepRow(row uint32) bool {
	if opt.Allow != nil && !opt.Allow.Contains(row) {
		return false
	}
	return opt.Match == nil || opt.Match(row)
}

// filtered reports whether opt restricts rows beyond tombstones.
func (opt *SearchOptions) filtered() bool { return opt.Allow != nil || opt.Match != nil }

// useExact reports whether an IVF collection should answer opt exactly
// over the allowed rows: when the estimated cost of scoring every allowed
// row, |allowed|·dim, is at most the index's: the coarse step (NList·dim),
// the probed lists' codes, and re-ranking. The index probes NProbe lists,
// or more when they are expected to hold fewer than K1 allowed rows
// (widening: an allowed share s of rows puts s·rows/NList allowed rows in a
// list). Without Allow the index is always used: an exact scan would score
// every row.
func useExact(opt SearchOptions, allowed uint64, p ivfpq.Params, rows int) bool {
	if opt.Allow == nil || rows == 0 {
		return false
	}
	exact := float64(allowed) * float64(p.Dim) * exactNsPerDim
	nprobe := filteredNProbe(opt.NProbe, p.NList, allowed, rows)
	perList := float64(rows) / float64(p.NList)
	s := float64(allowed) / float64(rows)
	lists := float64(min(nprobe, p.NList))
	if need := float64(opt.K1) / math.Max(s*perList, 1e-9); need > lists {
		lists = math.Min(need, float64(p.NList))
	}
	codeBytes := float64(p.M)
	if p.Bits == 4 {
		codeBytes = float64(p.M) / 2
	}
	refine := opt.Refine
	if refine <= 0 {
		refine = ivfpq.DefaultRefine(p.Bits)
	}
	rerank := math.Min(float64(opt.K1*refine), s*lists*perList)
	ivf := float64(p.NList)*float64(p.Dim)*scanNsPerDim +
		lists*perList*codeBytes*codeNsPerByte +
		rerank*float64(p.Dim)*exactNsPerDim
	return exact <= ivf
}

// filteredNProbe is the lists an index search with an allowed set of
// allowed rows of rows probes first: nprobe (or the default) divided by
// √(allowed/rows), at most nlist. The true top K1 of a share s of the rows
// are about the top K1/s of all of them, which lie in more lists than the
// top K1 do: with the unscaled nprobe, recall@10 fell to 0.87 at 2%
// allowed on 100k SIFT vectors (bench filter --crossover). Widening
// cannot fix that: it only counts candidates.
func filteredNProbe(nprobe, nlist int, allowed uint64, rows int) int {
	if nprobe <= 0 {
		nprobe = ivfpq.DefaultNProbe(nlist)
	}
	if rows <= 0 || allowed >= uint64(rows) {
		return min(nprobe, nlist)
	}
	s := math.Max(float64(allowed)/float64(rows), 1e-9)
	return int(math.Min(math.Ceil(float64(nprobe)/math.Sqrt(s)), float64(nlist)))
}

// exactSearchAllowed scores only the rows of allow (below n, not dead),
// one at a time, and keeps the K1 most similar that pass opt.Match and
// opt.Delta, best first. Dead and Match are checked only for rows good
// enough to enter the heap.
func exactSearchAllowed(rows []float32, dim int, metric Metric, dead, allow *roaring.Bitmap, q []float32, opt SearchOptions) []candidate {
	n := uint32(len(rows) / dim)
	k := opt.K1
	if k <= 0 || n == 0 {
		return nil
	}
	floor := float32(math.Inf(-1))
	if opt.HasDelta {
		floor = float32(opt.Delta)
	}
	h := make(minHeap, 0, min(k, int(min(allow.GetCardinality(), uint64(n)))))
	it := allow.ManyIterator()
	var buf [scanBatch]uint32
	for {
		got := it.NextMany(buf[:])
		if got == 0 {
			break
		}
		for _, row := range buf[:got] {
			if row >= n {
				// Rows ascend: the rest of the bitmap is past the file.
				return sortedCandidates(h)
			}
			v := rows[int(row)*dim : int(row+1)*dim]
			var s float32
			if metric == L2 {
				s = -simd.L2Sq(q, v)
			} else {
				s = simd.Dot(q, v)
			}
			if s < floor || (len(h) == k && s <= h[0].sim) {
				continue
			}
			if dead.Contains(row) || (opt.Match != nil && !opt.Match(row)) {
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
	return sortedCandidates(h)
}

func sortedCandidates(h minHeap) []candidate {
	out := []candidate(h)
	sortCandidates(out)
	return out
}
