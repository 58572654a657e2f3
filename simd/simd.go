package simd

// FastScanBlock is the number of vectors in one 4-bit fast-scan block.
const FastScanBlock = 32

// L2Sq returns the squared Euclidean distance between a and b.
// REQUIRES: len(b) >= len(a).
func L2Sq(a, b []float32) float32 { return cur.Load().l2Sq(a, b) }

// Dot returns the dot product of a and b.
// REQUIRES: len(b) >= len(a).
func Dot(a, b []float32) float32 { return cur.Load().dot(a, b) }

// L2SqBatch sets out[i] to L2Sq(q, rows[i*len(q):(i+1)*len(q)]) for every i.
// REQUIRES: len(rows) >= len(out)*len(q).
func L2SqBatch(q, rows []float32, out []float32) { cur.Load().l2SqBatch(q, rows, out) }

// DotBatch sets out[i] to Dot(q, rows[i*len(q):(i+1)*len(q)]) for every i.
// REQUIRES: len(rows) >= len(out)*len(q).
func DotBatch(q, rows []float32, out []float32) { cur.Load().dotBatch(q, rows, out) }

// PQLUTL2 fills lut ([m][ksub]) with the squared distances between each
// sub-vector of q and each centroid of its sub-space. centroids is
// [m][ksub][len(q)/m].
// REQUIRES: len(q)%m == 0, len(lut) >= m*ksub.
func PQLUTL2(q, centroids []float32, m, ksub int, lut []float32) {
	k := cur.Load()
	pqLUT(k.l2SqBatch, q, centroids, m, ksub, lut)
}

// PQLUTDot is PQLUTL2 with dot products instead of distances.
func PQLUTDot(q, centroids []float32, m, ksub int, lut []float32) {
	k := cur.Load()
	pqLUT(k.dotBatch, q, centroids, m, ksub, lut)
}

// pqLUT builds a LUT one sub-space at a time: sub-space s is one batch call
// scoring q's s-th sub-vector against the ksub contiguous centroids of s.
func pqLUT(batch func(q, rows, out []float32), q, centroids []float32, m, ksub int, lut []float32) {
	dsub := len(q) / m
	for s := 0; s < m; s++ {
		batch(q[s*dsub:(s+1)*dsub], centroids[s*ksub*dsub:(s+1)*ksub*dsub], lut[s*ksub:(s+1)*ksub])
	}
}

// ScanPQ8 scores len(out) 8-bit PQ codes of m bytes each: out[i] is the sum
// over sub-spaces j of lut[j*256+codes[i*m+j]].
// REQUIRES: len(codes) >= len(out)*m, len(lut) >= m*256.
func ScanPQ8(codes []byte, m int, lut []float32, out []float32) {
	cur.Load().scanPQ8(codes, m, lut, out)
}

// FastScan4 scores len(masks) blocks of 4-bit codes laid out as the package
// documentation describes. sums[b*32+j] receives the 16-bit score of vector j
// of block b (wrapping on overflow, which M <= 256 rules out), and bit j of
// masks[b] is set when that score is below thresh.
// REQUIRES: len(codes) >= len(masks)*ceil(m/2)*32, len(lut) >= ceil(m/2)*2*16,
// len(sums) >= len(masks)*32.
func FastScan4(codes []byte, m int, lut []byte, thresh uint16, sums []uint16, masks []uint32) {
	cur.Load().fastScan4(codes, m, lut, thresh, sums, masks)
}

// ScoreMask turns a 4-bit scan's 16-bit sums into exact pass/fail bits
// against a float bound, each vector with its own stored term: bit j%32 of
// masks[j/32] is set, for j < len(sums), when
//
//	float32(float32(sums[j])*scale) + offset + terms[j] < bound
//
// evaluated left to right in float32 with every operation rounded (no fused
// multiply-add), so a caller that computes a survivor's score with that
// expression gets the same comparison; the other bits of those masks are
// cleared. A NaN score or bound passes nothing, as with Go's <.
// REQUIRES: len(terms) >= len(sums), len(masks) >= ceil(len(sums)/32).
func ScoreMask(sums []uint16, scale, offset float32, terms []float32, bound float32, masks []uint32) {
	cur.Load().scoreMask(sums, scale, offset, terms, bound, masks)
}

// ScoreMask16 is ScoreMask with each vector's term in 16-bit fixed point
// (ivfpq's saved L2 terms, term ≈ base + t·step, base folded into offset):
// bit j%32 of masks[j/32] is set, for j < len(sums), when
//
//	d := float32(float32(sums[j])*scale) + offset
//	d += float32(float32(terms[j]) * tscale)
//	d < bound
//
// evaluated in that order in float32 with every operation rounded (no
// fused multiply-add), so a caller that computes a survivor's score with
// that expression gets the same comparison; the other bits of those masks
// are cleared. A NaN score or bound passes nothing.
// REQUIRES: len(terms) >= len(sums), len(masks) >= ceil(len(sums)/32).
func ScoreMask16(sums []uint16, scale, offset float32, terms []uint16, tscale, bound float32, masks []uint32) {
	cur.Load().scoreMask16(sums, scale, offset, terms, tscale, bound, masks)
}

// Min returns the smallest value of v. v holds no NaN (with one, the
// result is unspecified). REQUIRES: len(v) >= 1 (an empty v panics).
func Min(v []float32) float32 { return cur.Load().min(v) }

// Prefetchable are the element types Prefetch takes: a vector's floats,
// and an index list's codes and 16-bit terms.
type Prefetchable interface{ ~float32 | ~uint16 | ~byte }
