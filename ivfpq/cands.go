package ivfpq

import (
	"math"

	"github.com/memrl/memrl/simd"
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
// score[:len]; bound is +Inf until the first cut, or until the set is
// primed (prime.go) with a bound no smaller than the limit-th smallest
// score it will be offered, then the largest score kept by the last cut,
// and every pushed score is below the bound current at its push.
type candSet struct {
	score []float32
	row   []uint32
	limit int
	bound float32
	cut   bool // settle has set the bound since reset
	// tmp is the cuts' partition scratch, shared by the sets one
	// goroutine fills (its searchScratch's); nil partitions in place.
	tmp *selectScratch
}

// selectScratch is selectSmallest's partition scratch (simd.PartitionBelow).
type selectScratch struct {
	score [selectScratchLen]float32
	row   [selectScratchLen]uint32
}

// selectScratchLen is the longest range selectSmallest partitions through
// its scratch: a cut's 2·k·Refine candidates at k 10 are 160 at Refine 8
// and 320 at 16; a longer range is partitioned in place. The partition
// through scratch took 89 ns for 160 scores, in place 298 ns
// (simd.BenchmarkPartitionBelow).
const selectScratchLen = 512

// reset empties the set for a search keeping limit candidates, its cuts
// partitioning through tmp (the scratch of the goroutine that fills it;
// nil partitions in place).
// REQUIRES: limit >= 1.
func (c *candSet) reset(limit int, tmp *selectScratch) {
	c.tmp = tmp
	c.limit = limit
	if cap(c.score) < 2*limit {
		c.score = make([]float32, 0, 2*limit)
		c.row = make([]uint32, 0, 2*limit)
	}
	c.score = c.score[:0]
	c.row = c.row[:0]
	c.bound = float32(math.Inf(1))
	c.cut = false
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
	if n < c.limit || (n == c.limit && c.cut) {
		// Too few to cut, or cut and nothing pushed since (only a cut
		// leaves a cut set at its limit): nothing to do, and nothing
		// written, so a settled set can be read concurrently
		// (batchrerank.go).
		return
	}
	if n > c.limit {
		selectSmallest(c.score, c.row, c.limit, c.tmp)
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
		c.cut = true
	}
}

// full reports whether the set holds limit candidates.
// REQUIRES: settle ran since the last push.
func (c *candSet) full() bool { return len(c.score) >= c.limit }

// selectSmallest reorders score (and row with it) so that score[:k] holds
// the k smallest, in no particular order; of equal scores at the k-th, the
// lower rows. Scores are compared by orderKey, a total order that is float
// order for every non-NaN score, so the selection terminates whatever the
// input. Quickselect with a median-of-three pivot and branch-free
// partitions (simd.PartitionBelow): which side a score falls on is data,
// not a jump, because the scores near the bound are in random order and
// each comparison would be a coin-flip misprediction. With tmp (nil for
// none) a range of up to selectScratchLen scores is partitioned eight
// scores a step in AVX2, through tmp; without, or longer, in place. Ties
// are rare, so rather than partition by a (score, row) key they are
// settled where they meet the k-th, below.
// REQUIRES: 1 <= k <= len(score) == len(row).
func selectSmallest(score []float32, row []uint32, k int, tmp *selectScratch) {
	var ts []float32
	var tr []uint32
	if tmp != nil {
		ts, tr = tmp.score[:], tmp.row[:]
	}
	lo, hi := 0, len(score) // the k-th smallest is in [lo, hi)
	target := k - 1
	// INVARIANT: every score before lo is below, and every one from hi
	// on above, every score in [lo, hi), so ties with one in the range
	// are in the range.
	for hi-lo > 16 {
		mid := int(uint(lo+hi) >> 1)
		pk := median3(orderKey(score[lo]), orderKey(score[mid]), orderKey(score[hi-1]))
		j := lo + simd.PartitionBelow(score[lo:hi], row[lo:hi], int64(pk), ts, tr)
		if target < j {
			hi = j
			continue
		}
		// Not below the pivot: move the scores equal to it (the pivot
		// itself at least, so the range shrinks) to the front.
		j2 := j + simd.PartitionBelow(score[j:hi], row[j:hi], int64(pk)+1, ts, tr)
		if target < j2 {
			// The k-th is among the [j, j2) equal to the pivot, and
			// all its ties are there: keep their lower rows.
			sortByKeyRow(score[j:j2], row[j:j2])
			return
		}
		lo = j2
	}
	sortByKeyRow(score[lo:hi], row[lo:hi])
}

// sortByKeyRow sorts a short range by (orderKey(score), row): insertion
// sort. REQUIRES: len(row) == len(score).
func sortByKeyRow(score []float32, row []uint32) {
	row = row[:len(score)]
	for i := 1; i < len(score); i++ {
		s, r := score[i], row[i]
		ks := orderKey(s)
		j := i
		for ; j > 0; j-- {
			kp := orderKey(score[j-1])
			if kp < ks || (kp == ks && row[j-1] < r) {
				break
			}
			score[j], row[j] = score[j-1], row[j-1]
		}
		score[j], row[j] = s, r
	}
}

// orderKey is simd.OrderKey: an int32 that sorts as the float does.
func orderKey(f float32) int32 { return simd.OrderKey(f) }

// median3 returns the median of three keys.
func median3(a, b, c int32) int32 {
	if a > b {
		a, b = b, a
	}
	if b > c {
		b = c
	}
	return max(a, b)
}
