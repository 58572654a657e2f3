package simd

// Assembly kernels. Pointers and lengths are checked by the Go wrappers in
// cpu_amd64.go; the kernels trust them. REQUIRES for all: n >= 1 (pair) or
// n, dim >= 1 (batch), every pointer valid for the elements it covers.
// The kernels read exactly those elements (AVX-512 tails use masked loads,
// AVX2 tails use scalar loads), so no slack is needed after any slice.

//go:noescape
func l2SqAVX2(a, b *float32, n int) float32

//go:noescape
func dotAVX2(a, b *float32, n int) float32

//go:noescape
func l2SqBatchAVX2(q, rows *float32, dim int, out *float32, n int)

//go:noescape
func dotBatchAVX2(q, rows *float32, dim int, out *float32, n int)

//go:noescape
func l2SqAVX512(a, b *float32, n int) float32

//go:noescape
func dotAVX512(a, b *float32, n int) float32

//go:noescape
func l2SqBatchAVX512(q, rows *float32, dim int, out *float32, n int)

//go:noescape
func dotBatchAVX512(q, rows *float32, dim int, out *float32, n int)

// Fast-scan kernels. REQUIRES: groups >= 1, nblocks >= 1; codes covers
// nblocks*groups*32 bytes, lut groups*32 bytes, sums nblocks*32 values,
// masks nblocks values.

//go:noescape
func fastScan4AVX2(codes *byte, groups int, lut *byte, thresh uint16, sums *uint16, masks *uint32, nblocks int)

//go:noescape
func fastScan4AVX512(codes *byte, groups int, lut *byte, thresh uint16, sums *uint16, masks *uint32, nblocks int)

// scanPQ8AMD64 is the ADC scan for both AVX levels (it uses only VEX scalar
// instructions). REQUIRES: m >= 1, n >= 1; codes covers n*m bytes, lut
// m*256 floats, out n floats.
//
//go:noescape
func scanPQ8AMD64(codes *byte, m int, lut *float32, out *float32, n int)

// minAVX2 is Min's kernel (min_amd64.s). REQUIRES: n >= 1; v covers n
// floats.
//
//go:noescape
func minAVX2(v *float32, n int) float32

// scoreMaskAVX2 is ScoreMask's kernel (scoremask_amd64.s) over whole
// blocks. REQUIRES: nblocks >= 1; sums covers nblocks*32 uint16s, terms
// nblocks*32 floats, masks nblocks uint32s.
//
//go:noescape
func scoreMaskAVX2(sums *uint16, terms *float32, scale, offset, bound float32, masks *uint32, nblocks int)

// scoreMask16AVX2 is ScoreMask16's kernel (scoremask16_amd64.s) over whole
// blocks. REQUIRES: nblocks >= 1; sums and terms each cover nblocks*32
// uint16s, masks nblocks uint32s.
//
//go:noescape
func scoreMask16AVX2(sums, terms *uint16, scale, offset, tscale, bound float32, masks *uint32, nblocks int)

// dotBlocked8AVX2 is DotBlocked's kernel (blocked_avx2_amd64.s).
// REQUIRES: dim >= 1, nblocks >= 1; blocks covers nblocks*dim*8 floats,
// q dim floats, out nblocks*8 floats.
//
//go:noescape
func dotBlocked8AVX2(q, blocks *float32, dim int, out *float32, nblocks int)

// dotBlocked8F16AVX2 is DotBlockedF16's kernel (blocked16_avx2_amd64.s;
// needs F16C). REQUIRES: dim >= 1, nblocks >= 1; blocks covers
// nblocks*dim*8 halves, q dim floats, out nblocks*8 floats.
//
//go:noescape
func dotBlocked8F16AVX2(q *float32, blocks *uint16, dim int, out *float32, nblocks int)

// dotBlocked4QF16AVX2 is DotBlockedF16Multi's kernel for four queries
// (blocked16x4_avx2_amd64.s; needs F16C). REQUIRES: dim >= 1, nblocks >=
// 1; q covers 4*dim floats, blocks nblocks*dim*8 halves, out
// 3*ostride + nblocks*32 bytes.
//
//go:noescape
func dotBlocked4QF16AVX2(q *float32, dim int, blocks *uint16, nblocks int, out *float32, ostride int)
