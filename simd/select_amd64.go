package simd

import "math"

// The amd64 kernels of select.go (select_amd64.s), for both AVX levels:
// they are short passes over a few thousand floats, bound by loads rather
// than by vector width.

//go:noescape
func coarseDistAVX2(dst, norm, dot *float32, qq, unscale float32, n int)

//go:noescape
func minBitsAVX2(reps *int32, v *float32, n int)

//go:noescape
func maskLEAVX2(v *float32, b float32, masks *uint32, nblocks int)

//go:noescape
func lut4RowsAVX2(lut *float32, m int, mins *float32) (maxRange, offset float32)

//go:noescape
func lut4BytesAVX2(lut *float32, m int, mins *float32, scale float32, q *byte)

// coarseDistCall checks the slices (panicking like the Go version on
// short ones), runs the kernel over the multiples of 8 and the reference
// over the rest.
func coarseDistCall(dst, norm, dot []float32, qq, unscale float32) {
	n := len(dst)
	norm, dot = norm[:n], dot[:n]
	w := n &^ 7
	if w > 0 {
		coarseDistAVX2(&dst[0], &norm[0], &dot[0], qq, unscale, w)
	}
	coarseDistGeneric(dst[w:], norm[w:], dot[w:], qq, unscale)
}

// minBitsCall is coarseDistCall's counterpart for MinBits.
func minBitsCall(reps []int32, v []float32) {
	n := len(v)
	reps = reps[:n]
	w := n &^ 7
	if w > 0 {
		minBitsAVX2(&reps[0], &v[0], w)
	}
	minBitsGeneric(reps[w:], v[w:])
}

// maskLECall runs the kernel over the whole words and the reference over
// a last partial one.
func maskLECall(v []float32, b float32, masks []uint32) {
	n := len(v)
	_ = masks[:(n+FastScanBlock-1)/FastScanBlock]
	whole := n / FastScanBlock
	if whole > 0 {
		maskLEAVX2(&v[0], b, &masks[0], whole)
	}
	if n > whole*FastScanBlock {
		maskLEGeneric(v[whole*FastScanBlock:], b, masks[whole:])
	}
}

// quantizeLUT4Call checks the slices and runs the two passes, the scale
// computed between them as the reference computes it.
func quantizeLUT4Call(lut []float32, m int, q []byte) (scale, offset float32) {
	if m < 1 {
		return quantizeLUT4Generic(lut, m, q)
	}
	_, _ = lut[:16*m], q[:16*m]
	var buf [256]float32
	mins := buf[:]
	if m > len(buf) {
		mins = make([]float32, m)
	}
	maxRange, offset := lut4RowsAVX2(&lut[0], m, &mins[0])
	scale = 1
	if maxRange > 0 {
		scale = 255 / maxRange
	}
	lut4BytesAVX2(&lut[0], m, &mins[0], scale, &q[0])
	return scale, offset
}

//go:noescape
func partitionBelowAVX2(score *float32, row *uint32, n int, lim int32, tmpS *float32, tmpR *uint32) int

// compressPerm[m] lists the lanes whose bit is set in the 8-bit mask m, in
// order, then the others: VPERMD by it packs a vector's selected lanes to
// its front (partitionBelowAVX2).
var compressPerm = func() (t [256][8]uint32) {
	for m := range t {
		k := 0
		for pass := range 2 {
			for lane := range 8 {
				if (m>>lane&1 == 1) == (pass == 0) {
					t[m][k] = uint32(lane)
					k++
				}
			}
		}
	}
	return t
}()

// partitionBelowCall runs the kernel over the multiples of 8 and finishes
// the rest as the reference does, keeping both parts in input order.
// REQUIRES: len(tmpS), len(tmpR) >= len(score).
func partitionBelowCall(score []float32, row []uint32, lim int64, tmpS []float32, tmpR []uint32) int {
	n := len(score)
	row, tmpS, tmpR = row[:n], tmpS[:n], tmpR[:n]
	switch {
	case lim > math.MaxInt32:
		return n // every key is below
	case lim <= math.MinInt32:
		return 0 // none is
	}
	w := n &^ 7
	j := 0
	if w > 0 {
		j = partitionBelowAVX2(&score[0], &row[0], w, int32(lim), &tmpS[0], &tmpR[0])
	}
	return partitionStableTail(score, row, lim, w, j, tmpS, tmpR)
}
