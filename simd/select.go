package simd

import "math"

// The coarse step's kernels (ivfpq's probe selection) and the 4-bit
// look-up table's quantization. Each is bit for bit its Go reference at
// every level: the same float32 operations, each rounded, no fused
// multiply-add.

// CoarseDist sets dst[i], for i < len(dst), to
//
//	float32(qq+norm[i]) - float32(unscale*dot[i])
//
// each operation rounded in float32: a query's squared distances to the
// centroids from their dot products and norms.
// REQUIRES: len(norm) >= len(dst), len(dot) >= len(dst).
func CoarseDist(dst, norm, dot []float32, qq, unscale float32) {
	cur.Load().coarseDist(dst, norm, dot, qq, unscale)
}

// MinBits sets reps[i], for i < len(v), to the smaller of reps[i] and
// v[i]'s bits read as an int32 (which orders positive floats, and any
// float against one of the other sign, as the floats do).
// REQUIRES: len(reps) >= len(v).
func MinBits(reps []int32, v []float32) { cur.Load().minBits(reps, v) }

// MaskLE sets bit i%32 of masks[i/32], for i < len(v), when v[i] <= b
// (false for a NaN), and clears the other bits of those words.
// REQUIRES: len(masks) >= ceil(len(v)/32).
func MaskLE(v []float32, b float32, masks []uint32) { cur.Load().maskLE(v, b, masks) }

// QuantizeLUT4 maps the float table lut ([m][16], m >= 1) to bytes in
// q[:m*16]: for each row s, with lo_s its minimum, q = byte(float32((v −
// lo_s)·scale) + 0.5), where scale = 255 / the largest row range hi_s − lo_s
// (1 when every row is constant), so that a sum of m entries fits 16 bits.
// It returns scale and offset = Σ lo_s (summed in row order). The table
// holds no NaN (with one, the bytes are unspecified).
// REQUIRES: len(lut) >= 16·m, len(q) >= 16·m.
func QuantizeLUT4(lut []float32, m int, q []byte) (scale, offset float32) {
	return cur.Load().quantizeLUT4(lut, m, q)
}

// coarseDistGeneric is the reference for CoarseDist.
func coarseDistGeneric(dst, norm, dot []float32, qq, unscale float32) {
	norm, dot = norm[:len(dst)], dot[:len(dst)]
	for i := range dst {
		dst[i] = float32(qq+norm[i]) - float32(unscale*dot[i])
	}
}

// minBitsGeneric is the reference for MinBits.
func minBitsGeneric(reps []int32, v []float32) {
	reps = reps[:len(v)]
	for i, x := range v {
		reps[i] = min(reps[i], int32(math.Float32bits(x)))
	}
}

// maskLEGeneric is the reference for MaskLE.
func maskLEGeneric(v []float32, b float32, masks []uint32) {
	fillMasks(len(v), masks, func(i int) bool { return v[i] <= b })
}

// quantizeLUT4Generic is the reference for QuantizeLUT4. Plain
// comparisons rather than the min/max builtins, whose NaN handling made
// the Go version a third of 4-bit query time.
func quantizeLUT4Generic(lut []float32, m int, q []byte) (scale, offset float32) {
	var buf [256]float32
	mins := buf[:]
	if m > len(buf) {
		mins = make([]float32, m)
	}
	var maxRange float32
	for s := range m {
		row := lut[s*16 : s*16+16]
		lo, hi := row[0], row[0]
		for _, v := range row[1:] {
			if v < lo {
				lo = v
			}
			if v > hi {
				hi = v
			}
		}
		mins[s] = lo
		offset += lo
		if hi-lo > maxRange {
			maxRange = hi - lo
		}
	}
	scale = 1
	if maxRange > 0 {
		scale = 255 / maxRange
	}
	for s := range m {
		row := lut[s*16 : s*16+16]
		out := q[s*16 : s*16+16]
		lo := mins[s]
		for c, v := range row {
			// (v−lo)·scale <= 255, so +0.5 truncates to at most 255.
			out[c] = byte(float32((v-lo)*scale) + 0.5)
		}
	}
	return scale, offset
}
