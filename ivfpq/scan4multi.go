package ivfpq

import (
	"math"
	"math/bits"

	"github.com/memrl/memrl/simd"
)

// The multi-query 4-bit scan (batch.go): scan4 (search.go) for up to
// simd.FastScanMaxQueries queries over the same list. For each chunk of
// scanChunk vectors it decides each query's kernel threshold from that
// query's candidates as they stand at the chunk's start, runs
// simd.FastScan4Multi once for all of them (its sums and masks are
// FastScan4's, bit for bit), then finishes each query as scan4 does: the
// exact pass (ScoreMask, ScoreMask16) and the merge, the same float32
// expressions in the same order. So each query's candidates come out as
// scan4 leaves them (TestScan4MultiMatchesScan4).
//
// Why scan4 keeps its own copy of the threshold and the merge rather than
// calling these: Search's code stays main's, so its latency cannot move.
// With scan4 calling them, one query per call on one thread read 2-11%
// slower than main at 1M in six ABBA-alternated rounds (nprobe 32 and 96,
// bench/batch/fastscan_1m/abba_*); with scan4 as it was, 0.98-1.10
// (abba2_*); main against itself read 0.76-1.00 on the same loaded
// machine (aa_*). The copies are short, and the test above holds them to
// each other.

// scan4Params are one query's constants for one segment (scan4's doc
// comment gives the expressions, and scan4 computes them alike).
type scan4Params struct {
	scale, inv, offset, step float32
}

func newScan4Params(seg *segment, q4 lut4, bias float32) scan4Params {
	offset := q4.offset + bias
	if seg.terms16 != nil {
		offset += seg.grid.base
	}
	return scan4Params{scale: q4.scale, inv: 1 / q4.scale, offset: offset, step: seg.grid.step}
}

// thresh is the kernel's threshold for a chunk of seg given the worst
// candidate: with terms none (ScoreMask decides), without them the
// quantized sum that cannot beat worst; 0 when nothing can.
func (sp scan4Params) thresh(seg *segment, worst float32) uint16 {
	if seg.terms != nil || seg.terms16 != nil || math.IsInf(float64(worst), 1) {
		return math.MaxUint16
	}
	t := math.Ceil(float64((worst - sp.offset) * sp.scale))
	switch {
	case t <= 0:
		return 0
	case t < math.MaxUint16:
		return uint16(t)
	}
	return math.MaxUint16
}

// scan4Merge finishes vectors [v0, v1) of seg, whose kernel sums and
// masks are sums and masks: it primes an unbounded c as scan4 does
// (scores and rows are scratch of scanChunk), with terms it recomputes the masks exactly
// against c's worst candidate, then pushes every vector whose mask bit is
// set, whose score beats the worst candidate and that f keeps.
func (ix *Index) scan4Merge(seg *segment, v0, v1 int, sums []uint16, masks []uint32, sp scan4Params, f *Filter, c *candSet, scores []float32, rows []uint32) {
	if c.primeable(v1-v0, f) {
		// scan4's priming (prime.go); the kernel had no threshold, as
		// the bound was +Inf.
		primeChunkScores(seg, v0, v1-v0, sums, sp.inv, sp.offset, sp.step, scores)
		c.primeBound(scores[:v1-v0], rows)
	}
	switch {
	case seg.terms != nil:
		simd.ScoreMask(sums[:v1-v0], sp.inv, sp.offset, seg.terms[v0:v1], c.worst(), masks)
	case seg.terms16 != nil:
		simd.ScoreMask16(sums[:v1-v0], sp.inv, sp.offset, seg.terms16[v0:v1], sp.step, c.worst(), masks)
	}
	for bi, mask := range masks {
		for mask != 0 {
			j := bits.TrailingZeros32(mask)
			mask &= mask - 1
			idx := v0 + bi*simd.FastScanBlock + j
			if idx >= v1 {
				break
			}
			// ScoreMask's (ScoreMask16's) expression: the
			// conversions round the products (no fused multiply-add).
			d := float32(float32(sums[bi*simd.FastScanBlock+j])*sp.inv) + sp.offset
			if seg.terms != nil {
				d += seg.terms[idx]
			} else if seg.terms16 != nil {
				d += float32(float32(seg.terms16[idx]) * sp.step)
			}
			if d >= c.worst() {
				continue
			}
			row := seg.ids[idx]
			if f != nil && !f.keep(row) {
				continue
			}
			c.push(d, row)
		}
	}
}

// scan4Query is one query of a multi-query scan of a list.
type scan4Query struct {
	q4   lut4
	lut8 []byte
	bias float32 // the query's listBias for the list
	c    *candSet
}

// scan4Scratch is a multi-query scan's temporaries: scan4Multi's
// FastScan4Multi arguments and each query's sums and masks for a chunk.
type scan4Scratch struct {
	fs    simd.FastScan4Queries
	sums  [simd.FastScanMaxQueries][scanChunk]uint16
	masks [simd.FastScanMaxQueries][scanChunk / simd.FastScanBlock]uint32
	// scores and rows are scan4Merge's priming scratch (prime.go).
	scores [scanChunk]float32
	rows   [scanChunk]uint32
}

// scanList4MultiLocked is scanListLocked (4-bit codes) for up to
// simd.FastScanMaxQueries queries: list l's base segment base and its
// tail, each chunk of codes read once for all of qs. Each query's
// candidates end as scanListLocked would leave them.
// REQUIRES: ix.mu held for reading; list l's base checked (checkList);
// 1 <= len(qs) <= simd.FastScanMaxQueries.
func (ix *Index) scanList4MultiLocked(l int, base *segment, qs []scan4Query, f *Filter, t *scan4Scratch) {
	for _, seg := range [2]*segment{base, &ix.lists[l].tail} {
		if len(seg.ids) != 0 {
			ix.scan4Multi(seg, qs, f, t)
		}
	}
}

// scan4Multi is scan4 for up to simd.FastScanMaxQueries queries.
func (ix *Index) scan4Multi(seg *segment, qs []scan4Query, f *Filter, t *scan4Scratch) {
	m := ix.p.M
	var sp [simd.FastScanMaxQueries]scan4Params
	for i := range qs {
		sp[i] = newScan4Params(seg, qs[i].q4, qs[i].bias)
	}
	n := len(seg.ids)
	bb := block4Bytes(m)
	nblocks := (n + simd.FastScanBlock - 1) / simd.FastScanBlock
	const chunkBlocks = scanChunk / simd.FastScanBlock
	var which [simd.FastScanMaxQueries]int // the kernel's query k is qs[which[k]]
	for b0 := 0; b0 < nblocks; b0 += chunkBlocks {
		b1 := min(b0+chunkBlocks, nblocks)
		v0, v1 := b0*simd.FastScanBlock, min(b1*simd.FastScanBlock, n)
		// The queries with something to find in this chunk (scan4's
		// threshold 0 skips it).
		fs := &t.fs
		fs.N = 0
		for i := range qs {
			th := sp[i].thresh(seg, qs[i].c.worst())
			if th == 0 {
				continue
			}
			k := fs.N
			which[k] = i
			fs.LUT[k], fs.Thresh[k] = qs[i].lut8, th
			fs.Sums[k], fs.Masks[k] = t.sums[k][:], t.masks[k][:b1-b0]
			fs.N++
		}
		if fs.N == 0 {
			continue
		}
		simd.FastScan4Multi(seg.codes[b0*bb:b1*bb], m, fs)
		for k := range fs.N {
			i := which[k]
			ix.scan4Merge(seg, v0, v1, fs.Sums[k], fs.Masks[k], sp[i], f, qs[i].c, t.scores[:], t.rows[:])
		}
	}
}
