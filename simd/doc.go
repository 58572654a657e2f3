// Package simd holds the numeric kernels that phase-1 search spends its time
// in: squared L2 distance and dot product over float32 vectors (one pair, or
// one query against many contiguous rows), product-quantization look-up table
// construction, the 8-bit ADC scan and the 4-bit fast-scan block kernel.
//
// Every kernel has a plain Go reference (the *Generic functions in
// generic.go). The exported functions dispatch to the best implementation the
// CPU supports; until the assembly versions land they call the Go code.
//
// # Layouts
//
// Vectors are []float32 of equal length. A batch of n rows is one contiguous
// []float32 of n*dim values, row-major.
//
// PQ centroids for M sub-spaces of dsub dimensions with ksub centroids each
// are laid out [M][ksub][dsub] in one []float32. A look-up table (LUT) built
// for a query is [M][ksub]: lut[m*ksub+c] is the distance (or dot product)
// between the query's m-th sub-vector and centroid c of sub-space m.
//
// 8-bit codes: one byte per sub-space, n codes of M bytes, row-major.
//
// 4-bit fast-scan codes are stored in blocks of FastScanBlock (32) vectors.
// A block holds ceil(M/2) groups of 32 bytes; group p packs sub-spaces 2p
// (low nibble) and 2p+1 (high nibble) of the block's 32 vectors:
//
//	block := [M/2][32]byte
//	block[p][j] = code[j][2p] | code[j][2p+1]<<4
//
// When M is odd the last group's high nibbles are zero, and the caller pads
// the LUT with a 16-byte row of zeros. The quantized LUT is [M][16]uint8
// (M rounded up to even); a vector's score is the sum of its M entries in
// 16-bit arithmetic (M*255 must fit in uint16, so M <= 256).
package simd
