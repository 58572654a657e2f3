package ivfpq

import (
	"math"
)

// Priming a candidate set from its first chunk of scores.
//
// A set's bound is +Inf until its first cut (cands.go), so the first list
// a query scans pushes every vector of its first chunk and cuts after
// 2·limit of them: at 1M (IVF2048,PQ52x4, sift1m-deb's held-out queries,
// nprobe 48, Refine 8) the batch's first round, which scans each query's
// nearest list alone, was 11% of the CPU profile for 2% of the lists,
// nearly all of it pushes and cuts (bench/batch/README.md, "Priming").
//
// Instead, when a set has no bound and the chunk holds at least limit
// vectors, the chunk's scores are computed first (the merge's expression,
// so bit for bit the scores the merge would push) and the set gets the
// limit-th smallest of them as its bound, admitting it and every score
// below. This loses nothing: at least limit of the chunk's scores are at
// most that value and every one of them is pushed (none is turned away,
// as no filter is set), so the limit smallest scores of the search are at
// most it too, and a score above it could never have been kept. Ties at
// the bound are admitted, so settle's rule for equal scores (the lower
// rows) decides among them as before.

// primeChunkScores computes the scores scan4's merge gives the n vectors
// of a chunk starting at vector v0 of seg, from their kernel sums, into
// out[:n]: the same float32 operations in the same order (see scan4).
func primeChunkScores(seg *segment, v0, n int, sums []uint16, inv, offset, step float32, out []float32) {
	sums, out = sums[:n], out[:n]
	switch {
	case seg.terms != nil:
		terms := seg.terms[v0 : v0+n]
		for j, s := range sums {
			d := float32(float32(s)*inv) + offset
			out[j] = d + terms[j]
		}
	case seg.terms16 != nil:
		terms := seg.terms16[v0 : v0+n]
		for j, s := range sums {
			d := float32(float32(s)*inv) + offset
			out[j] = d + float32(float32(terms[j])*step)
		}
	default:
		for j, s := range sums {
			out[j] = float32(float32(s)*inv) + offset
		}
	}
}

// primeBound gives c, which has no bound yet, the bound that admits the
// limit smallest of scores and nothing above them (see above), unless
// that value is not finite. It reorders scores, selecting with the
// candidate set's own selectSmallest; rows is its scratch (its values do
// not matter).
// REQUIRES: c.limit <= len(scores) <= len(rows); every vector scored in
// scores will be offered to c unfiltered.
func (c *candSet) primeBound(scores []float32, rows []uint32) {
	selectSmallest(scores, rows[:len(scores)], c.limit, c.tmp)
	t := scores[0] // the limit-th smallest: the largest of the limit smallest, by orderKey
	for _, s := range scores[1:c.limit] {
		if orderKey(s) > orderKey(t) {
			t = s
		}
	}
	if math.IsNaN(float64(t)) || math.IsInf(float64(t), 0) {
		return
	}
	// Scores are pushed when below the bound: the next float above t
	// admits t itself.
	c.bound = math.Nextafter32(t, float32(math.Inf(1)))
}

// primeable reports whether c should be primed from a chunk of n
// vectors: it has no bound yet, the chunk can fill it, and no filter can
// turn a vector of the chunk away.
func (c *candSet) primeable(n int, f *Filter) bool {
	return f == nil && n >= c.limit && math.IsInf(float64(c.bound), 1)
}
