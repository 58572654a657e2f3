package ivfpq

import (
	"cmp"
	"math"
	"slices"

	"github.com/memrl/memrl/simd"
)

// Ordering a batch's queries before they are cut into chunks.
//
// A chunk's queries share each list's read (batch.go): a list is scanned
// once for all the queries of the chunk that probe it. Queries near each
// other probe many of the same lists, so the more alike a chunk's queries,
// the more of them each read serves. When a batch has more than one
// chunk, searchBatch sorts its queries by their projection on the
// direction along which the coarse centroids spread the most
// (slabDirection) and cuts the sorted order into chunks, so that each
// chunk is a slab of the space rather than a random draw from all of it;
// the results go back in the caller's order. At 1M (IVF2048,PQ52x4,
// 2,000 queries in two chunks) a list scan then served 5.5 queries on
// average instead of 4.0 at nprobe 48 (12,198 scans for the same 66,778
// query–list pairs, from 16,712), and 8.6 instead of 6.7 at nprobe 160;
// alternating the two orders batch by batch in one process gave 1–2% less
// CPU a query at nprobe 48, Refine 8, and 3% at nprobe 160, Refine 32
// (medians of 30 and 15 pairs; the sort and the copy cost about 0.3 ms a
// batch of 2,000).
//
// The order changes no query's results: each query is searched as before,
// only beside different neighbours in its chunk.

// slabSample and slabFloats bound the centroids slabDirection reads
// (evenly spaced among them): at most slabSample of them and slabFloats
// values in all; slabIters is its power iterations. The direction only
// needs to split the space roughly in two, and it is computed on the
// first batch search of the index, which waits for it: at most
// 2·slabIters·slabFloats multiply-adds (21 M, some milliseconds) at any
// dimension, 2.6 M at 128.
const (
	slabSample = 1024
	slabFloats = 1 << 20
	slabIters  = 10
)

// slabDirection returns the unit vector along which the coarse centroids
// spread the most, nearly (power iteration from a fixed start, so the
// same for an index every time), or nil when they do not spread (one
// list, or centroids all alike). Computed once; safe for concurrent use.
func (ix *Index) slabDirection() []float32 {
	ix.slabOnce.Do(func() {
		sample := min(slabSample, max(2, slabFloats/ix.p.Dim))
		ix.slabDir = principalDirection(ix.coarse, ix.p.Dim, ix.p.NList, sample, slabIters)
	})
	return ix.slabDir
}

// principalDirection returns a unit vector along which rows (n rows of
// dim values) spread the most, nearly: power iteration over the
// covariance of at most sample of them, evenly spaced, iters times from a
// fixed start, in float64. It returns nil when the rows do not spread or
// a value is not finite.
func principalDirection(rows []float32, dim, n, sample, iters int) []float32 {
	if n < 2 {
		return nil
	}
	step := max(1, n/sample)
	var pick []int
	for i := 0; i < n; i += step {
		pick = append(pick, i)
	}
	mean := make([]float64, dim)
	for _, i := range pick {
		for j, x := range rows[i*dim : (i+1)*dim] {
			mean[j] += float64(x)
		}
	}
	for j := range mean {
		mean[j] /= float64(len(pick))
	}
	v := make([]float64, dim)
	for j := range v {
		v[j] = 1 + float64(j%7) // any start not orthogonal to the answer
	}
	w := make([]float64, dim)
	for range iters {
		clear(w)
		for _, i := range pick {
			row := rows[i*dim : (i+1)*dim]
			var t float64
			for j, x := range row {
				t += (float64(x) - mean[j]) * v[j]
			}
			for j, x := range row {
				w[j] += t * (float64(x) - mean[j])
			}
		}
		var norm float64
		for _, x := range w {
			norm += x * x
		}
		norm = math.Sqrt(norm)
		if !(norm > 0) || math.IsInf(norm, 0) {
			return nil
		}
		for j := range v {
			v[j] = w[j] / norm
		}
	}
	out := make([]float32, dim)
	for j, x := range v {
		out[j] = float32(x)
	}
	return out
}

// batchOrder returns the order to search the n queries of qs in (see
// above): query perm[j] goes j-th. It returns nil when the index offers
// no direction.
func (ix *Index) batchOrder(qs []float32, n int) []int32 {
	dir := ix.slabDirection()
	if dir == nil {
		return nil
	}
	dim := ix.p.Dim
	key := make([]float32, n)
	perm := make([]int32, n)
	for i := range n {
		key[i] = simd.Dot(qs[i*dim:(i+1)*dim], dir)
		perm[i] = int32(i)
	}
	slices.SortFunc(perm, func(a, b int32) int {
		if c := cmp.Compare(key[a], key[b]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return perm
}

// permuteQueries returns the queries of qs in the order perm.
func permuteQueries(qs []float32, dim int, perm []int32) []float32 {
	out := make([]float32, len(qs))
	for j, i := range perm {
		copy(out[j*dim:(j+1)*dim], qs[int(i)*dim:(int(i)+1)*dim])
	}
	return out
}
