package ivfpq

import (
	"fmt"
	"math"
)

// 16-bit L2 terms (format version 4). An L2-scored index stores one term
// per vector, ‖r̂‖² + 2⟨c, r̂⟩; as float32 they were 4 of the ~35-43 bytes
// a vector costs at 1M. Within one list they span at most ~160,000, so a
// 16-bit grid per list has a step of ~2.5, far below the 4-bit look-up
// table's quantization error, and halves their RAM. Saved (mapped) base
// segments hold them this way; tails, and indexes never saved, keep
// float32.

// termMax is the largest 16-bit term.
const termMax = math.MaxUint16

// termGrid is one list's 16-bit fixed-point grid: t stands for the term
// base + t·step (value). A zero grid (base 0, step 0) is that of an empty
// list, and of one whose terms are all 0.
type termGrid struct{ base, step float32 }

// newTermGrid returns the grid Save stores a list's terms on: base = the
// smallest term, step = (largest − smallest)/65535 (computed in float64
// and rounded once; 0 when they are equal, and every t is then 0), so that
// quantize is within step/2 of every term. It fails with ErrTermRange when
// a term is NaN or infinite, or when the span or the largest value does
// not fit float32 (then value(65535) would overflow).
func newTermGrid(terms []float32) (termGrid, error) {
	if len(terms) == 0 {
		return termGrid{}, nil
	}
	lo, hi := terms[0], terms[0]
	for i, x := range terms {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return termGrid{}, fmt.Errorf("%w: term %d of the list is %v", ErrTermRange, i, x)
		}
		lo, hi = min(lo, x), max(hi, x)
	}
	if span := hi - lo; math.IsInf(float64(span), 0) {
		return termGrid{}, fmt.Errorf("%w: terms span [%g, %g]", ErrTermRange, lo, hi)
	}
	g := termGrid{base: lo, step: float32((float64(hi) - float64(lo)) / termMax)}
	if v := g.value(termMax); math.IsInf(float64(v), 0) {
		return termGrid{}, fmt.Errorf("%w: terms span [%g, %g]", ErrTermRange, lo, hi)
	}
	return g, nil
}

// valid reports whether a grid read from a file can be used: base finite,
// step finite and not negative (Open refuses others as ErrCorrupt).
func (g termGrid) valid() bool {
	b, s := float64(g.base), float64(g.step)
	return !math.IsNaN(b) && !math.IsInf(b, 0) && !math.IsNaN(s) && !math.IsInf(s, 0) && s >= 0
}

// covers reports whether x lies within half a step of the grid's span
// [base, base + 65535·step] (in float64), where quantize(x) is within
// step/2 (and float32 rounding) of x. Save keeps a list's grid when every
// term added since Open is covered, so the stored base terms are copied,
// not requantized.
func (g termGrid) covers(x float32) bool {
	d, s := float64(x)-float64(g.base), float64(g.step)
	return d >= -s/2 && d <= (termMax+0.5)*s
}

// quantize returns the grid point nearest x, clamped to [0, 65535]
// (rounded in float64: t = round((x − base)/step)). REQUIRES: x finite.
func (g termGrid) quantize(x float32) uint16 {
	if g.step == 0 {
		return 0
	}
	t := math.Round((float64(x) - float64(g.base)) / float64(g.step))
	switch {
	case t <= 0:
		return 0
	case t >= termMax:
		return termMax
	}
	return uint16(t)
}

// value returns the term t stands for: base + float32(t)·step, the
// product rounded before the sum (no fused multiply-add). scan8, Remap and
// Save's merges read 16-bit terms through it; scan4 folds base into its
// offset instead (see scan4).
func (g termGrid) value(t uint16) float32 {
	return g.base + float32(float32(t)*g.step)
}
