package simd

// BlockRows is the number of rows per block of the blocked layout that
// DotBlocked reads.
const BlockRows = 8

// Blocked returns rows (n rows of dim floats, row-major) in the blocked
// layout: ceil(n/BlockRows) blocks, block b holding rows
// b·BlockRows … b·BlockRows+7 as [dim][BlockRows] floats (coordinate d of
// those 8 rows side by side). Rows past n in the last block are zero.
// The layout lets a kernel score 8 rows per vector instruction without
// horizontal sums (DotBlocked).
// REQUIRES: dim >= 1, len(rows) % dim == 0.
func Blocked(rows []float32, dim int) []float32 {
	n := len(rows) / dim
	nb := (n + BlockRows - 1) / BlockRows
	out := make([]float32, nb*dim*BlockRows)
	for i := 0; i < n; i++ {
		blk := out[i/BlockRows*dim*BlockRows:]
		j := i % BlockRows
		for d, v := range rows[i*dim : (i+1)*dim] {
			blk[d*BlockRows+j] = v
		}
	}
	return out
}

// DotBlocked sets out[i] to the dot product of q with row i of blocks, a
// Blocked layout of rows of len(q) floats. Padding rows score 0.
// REQUIRES: len(out) % BlockRows == 0, len(blocks) >= len(out)*len(q).
func DotBlocked(q, blocks, out []float32) { cur.Load().dotBlocked(q, blocks, out) }

// dotBlockedGeneric is the reference for DotBlocked: each row's sum in
// coordinate order, as the assembly takes it.
func dotBlockedGeneric(q, blocks, out []float32) {
	dim := len(q)
	if len(out)%BlockRows != 0 {
		panic("simd: DotBlocked: len(out) is not a multiple of BlockRows")
	}
	blocks = blocks[:len(out)*dim]
	for b := 0; b < len(out)/BlockRows; b++ {
		blk := blocks[b*dim*BlockRows : (b+1)*dim*BlockRows]
		for j := range BlockRows {
			var acc float32
			for d, x := range q {
				acc += x * blk[d*BlockRows+j]
			}
			out[b*BlockRows+j] = acc
		}
	}
}

// BlockedF16 is Blocked with each value rounded to half precision
// (ToFloat16): half the bytes, for DotBlockedF16.
func BlockedF16(rows []float32, dim int) []uint16 {
	b := Blocked(rows, dim)
	out := make([]uint16, len(b))
	for i, v := range b {
		out[i] = ToFloat16(v)
	}
	return out
}

// DotBlockedF16 is DotBlocked over a BlockedF16 layout: out[i] is the dot
// product of q with row i, its values widened to float32 exactly.
//
// Why half precision: a coarse quantizer's centroids are read whole for
// every query, and at 2,048 × 128 the float32 copy (1 MB) no longer stays
// in L2; the kernel then runs at the speed of L3, not of its FMAs, and half
// the bytes takes about half the time. The rounding (a relative 2⁻¹¹ of
// each value) is for callers that only rank rows by the result and then
// recompute what they keep exactly.
// REQUIRES: len(out) % BlockRows == 0, len(blocks) >= len(out)*len(q).
func DotBlockedF16(q []float32, blocks []uint16, out []float32) {
	cur.Load().dotBlockedF16(q, blocks, out)
}

// dotBlockedF16Generic is the reference for DotBlockedF16: dotBlockedGeneric
// over the widened values.
func dotBlockedF16Generic(q []float32, blocks []uint16, out []float32) {
	dim := len(q)
	if len(out)%BlockRows != 0 {
		panic("simd: DotBlockedF16: len(out) is not a multiple of BlockRows")
	}
	blocks = blocks[:len(out)*dim]
	for b := 0; b < len(out)/BlockRows; b++ {
		blk := blocks[b*dim*BlockRows : (b+1)*dim*BlockRows]
		for j := range BlockRows {
			var acc float32
			for d, x := range q {
				acc += x * FromFloat16(blk[d*BlockRows+j])
			}
			out[b*BlockRows+j] = acc
		}
	}
}
