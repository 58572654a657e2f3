package simd

// L2Sq returns the squared Euclidean distance between a and b.
// REQUIRES: len(b) >= len(a).
func L2Sq(a, b []float32) float32 { return l2SqGeneric(a, b) }

// Dot returns the dot product of a and b.
// REQUIRES: len(b) >= len(a).
func Dot(a, b []float32) float32 { return dotGeneric(a, b) }

// L2SqBatch sets out[i] to L2Sq(q, rows[i*len(q):(i+1)*len(q)]) for every i.
// REQUIRES: len(rows) >= len(out)*len(q).
func L2SqBatch(q, rows []float32, out []float32) { l2SqBatchGeneric(q, rows, out) }

// DotBatch sets out[i] to Dot(q, rows[i*len(q):(i+1)*len(q)]) for every i.
// REQUIRES: len(rows) >= len(out)*len(q).
func DotBatch(q, rows []float32, out []float32) { dotBatchGeneric(q, rows, out) }

// PQLUTL2 fills lut ([m][ksub]) with the squared distances between each
// sub-vector of q and each centroid of its sub-space. centroids is
// [m][ksub][len(q)/m].
// REQUIRES: len(q)%m == 0, len(lut) >= m*ksub.
func PQLUTL2(q, centroids []float32, m, ksub int, lut []float32) {
	pqLUTL2Generic(q, centroids, m, ksub, lut)
}

// PQLUTDot is PQLUTL2 with dot products instead of distances.
func PQLUTDot(q, centroids []float32, m, ksub int, lut []float32) {
	pqLUTDotGeneric(q, centroids, m, ksub, lut)
}

// ScanPQ8 scores len(out) 8-bit PQ codes of m bytes each: out[i] is the sum
// over sub-spaces j of lut[j*256+codes[i*m+j]].
// REQUIRES: len(codes) >= len(out)*m, len(lut) >= m*256.
func ScanPQ8(codes []byte, m int, lut []float32, out []float32) {
	scanPQ8Generic(codes, m, lut, out)
}

// FastScan4 scores len(masks) blocks of 4-bit codes laid out as the package
// documentation describes. sums[b*32+j] receives the 16-bit score of vector j
// of block b (wrapping on overflow, which M <= 256 rules out), and bit j of
// masks[b] is set when that score is below thresh.
// REQUIRES: len(codes) >= len(masks)*ceil(m/2)*32, len(lut) >= ceil(m/2)*2*16,
// len(sums) >= len(masks)*32.
func FastScan4(codes []byte, m int, lut []byte, thresh uint16, sums []uint16, masks []uint32) {
	fastScan4Generic(codes, m, lut, thresh, sums, masks)
}

// Level names the kernels in use: "generic", "avx2" or "avx512".
func Level() string { return "generic" }
