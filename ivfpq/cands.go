package ivfpq

import (
	"math"
	"math/bits"
)

// candSet collects a search's candidates: it keeps the limit smallest
// scores pushed into it, as topK does, but as an unordered buffer that is
// cut back to the limit smallest only when it holds 2·limit (and when the
// search reads it, see settle), rather than as a heap.
//
// Why: a heap push walks about log2(limit) levels, each a load that
// depends on the last comparison, plus a mispredicted branch or two; with
// limit 160 (k 10, Refine 16) that was 41–49 ns a push and 12–14% of a
// search at 1M, IVF2048,PQ64x4 (584 pushes a query at nprobe 32). An
// append is a few ns; the price is a looser admission bound between cuts
// (more appends) and a selection per limit appends: in the same search the
// cuts took 0.28–0.33 s of profile samples where the pushes took 0.57 s.
//
// INVARIANT: the limit smallest scores pushed since reset are among
// score[:len]; bound is +Inf until the first cut, then the largest score
// kept by the last cut, and every pushed score is below the bound current
// at its push.
type candSet struct {
	score []float32
	row   []uint32
	limit int
	bound float32
}

// reset empties the set for a search keeping limit candidates.
// REQUIRES: limit >= 1.
func (c *candSet) reset(limit int) {
	c.limit = limit
	if cap(c.score) < 2*limit {
		c.score = make([]float32, 0, 2*limit)
		c.row = make([]uint32, 0, 2*limit)
	}
	c.score = c.score[:0]
	c.row = c.row[:0]
	c.bound = float32(math.Inf(1))
}

// worst is the score a candidate must beat to be pushed. It is never
// below the limit-th smallest score pushed so far (it may be above: it
// tightens only at a cut), so a candidate it turns away could not have
// been kept.
func (c *candSet) worst() float32 { return c.bound }

// push adds (s, r). REQUIRES: s < c.worst(), or the set holds fewer than
// limit (so that scores no comparison admits, +Inf and NaN, can still fill
// it).
func (c *candSet) push(s float32, r uint32) {
	c.score = append(c.score, s)
	c.row = append(c.row, r)
	if len(c.score) >= 2*c.limit {
		c.settle()
	}
}

// settle cuts the set back to its limit smallest scores (in no particular
// order; of equal scores at the limit, the lower rows) and tightens the
// bound when the set is full. Readers of score and row call
// it first.
func (c *candSet) settle() {
	n := len(c.score)
	if n < c.limit {
		return
	}
	if n > c.limit {
		selectSmallest(c.score, c.row, c.limit)
		c.score, c.row = c.score[:c.limit], c.row[:c.limit]
	}
	b := c.score[0]
	for _, s := range c.score[1:] {
		if s > b {
			b = s
		}
	}
	// A NaN score (damage the checksums would catch first) must not
	// become a bound that admits nothing and hides the real candidates.
	if b == b {
		c.bound = b
	}
}

// full reports whether the set holds limit candidates.
// REQUIRES: settle ran since the last push.
func (c *candSet) full() bool { return len(c.score) >= c.limit }

// selectSmallest reorders score (and row with it) so that score[:k] holds
// the k smallest, in no particular order, ties broken by lower row: it
// selects by the pair key (orderKey(score), row), a total order that is
// float order for every non-NaN score, so the selection is deterministic
// and terminates whatever the input. Quickselect with a median-of-three
// pivot and branch-free partitions: which side a score falls on is data,
// not a jump, because the scores near the bound are in random order and
// each comparison would be a coin-flip misprediction.
// REQUIRES: 1 <= k <= len(score) == len(row).
func selectSmallest(score []float32, row []uint32, k int) {
	lo, hi := 0, len(score) // the k-th smallest is in [lo, hi)
	target := k - 1
	for hi-lo > 16 {
		mid := int(uint(lo+hi) >> 1)
		pk := median3(pairKey(score[lo], row[lo]), pairKey(score[mid], row[mid]), pairKey(score[hi-1], row[hi-1]))
		j := lo + partitionBelow(score[lo:hi], row[lo:hi], pk, false)
		if target < j {
			hi = j
			continue
		}
		// Not below the pivot: move the keys equal to it (the pivot
		// itself at least, so the range shrinks) to the front.
		j2 := j + partitionBelow(score[j:hi], row[j:hi], pk, true)
		if target < j2 {
			return
		}
		lo = j2
	}
	for i := lo + 1; i < hi; i++ {
		s, r := score[i], row[i]
		ks := pairKey(s, r)
		j := i
		for ; j > lo && pairKey(score[j-1], row[j-1]) > ks; j-- {
			score[j], row[j] = score[j-1], row[j-1]
		}
		score[j], row[j] = s, r
	}
}

// partitionBelow moves the entries whose pair key is below pk (at most pk
// when orEqual) to the front of score (row with it) and returns how many
// there are: Lomuto's scheme, with the step taken from the borrow of a
// 64-bit subtraction, never a branch. REQUIRES: len(row) == len(score).
func partitionBelow(score []float32, row []uint32, pk uint64, orEqual bool) int {
	row = row[:len(score)]
	j := 0
	if orEqual {
		for i, x := range score {
			r := row[i]
			score[i], row[i] = score[j], row[j]
			score[j], row[j] = x, r
			_, above := bits.Sub64(pk, pairKey(x, r), 0)
			j += int(1 - above)
		}
		return j
	}
	for i, x := range score {
		r := row[i]
		score[i], row[i] = score[j], row[j]
		score[j], row[j] = x, r
		_, below := bits.Sub64(pairKey(x, r), pk, 0)
		j += int(below)
	}
	return j
}

// pairKey maps (score, row) to a uint64 that sorts by score as floats sort
// (with −0 below +0, and NaNs beyond the infinities by sign), then by row:
// a positive float's bits already sort as integers, a negative one's
// magnitude bits are flipped so that a larger magnitude sorts lower, and
// the sign bit is flipped to turn that signed order into an unsigned one.
func pairKey(f float32, row uint32) uint64 {
	b := math.Float32bits(f)
	b ^= uint32(int32(b)>>31)>>1 | 1<<31
	return uint64(b)<<32 | uint64(row)
}

// median3 returns the median of three keys.
func median3(a, b, c uint64) uint64 {
	if a > b {
		a, b = b, a
	}
	if b > c {
		b = c
	}
	return max(a, b)
}
