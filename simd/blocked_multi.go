package simd

// DotBlockedF16Multi is DotBlockedF16 for several queries against the
// same rows: qs holds nq = len(qs)/dim queries back to back, and
// out[i·rows + r] is set to the dot product of query i with row r of
// blocks (a BlockedF16 layout of rows of dim values), bit for bit what
// DotBlockedF16(qs[i·dim:(i+1)·dim], blocks, out[i·rows:(i+1)·rows])
// sets it to on the same kernel level.
//
// Why: a coarse quantizer's centroids are read whole for every query; at
// 2,048 × 128 the half-precision copy is 0.5 MB, which one query streams
// through once for 262,144 multiply-adds, bound by the cache's bandwidth.
// Four queries at a time widen each half once and multiply it into four
// accumulators, so a batch of queries reads the centroids a quarter as
// often and the kernel runs at the speed of its FMAs (ivfpq's batch
// search, issue 29).
//
// REQUIRES: dim >= 1, len(qs) % dim == 0, rows % BlockRows == 0,
// len(out) >= nq·rows, len(blocks) >= rows·dim.
func DotBlockedF16Multi(qs []float32, dim int, blocks []uint16, rows int, out []float32) {
	cur.Load().dotBlockedF16Multi(qs, dim, blocks, rows, out)
}

// dotBlockedF16MultiGeneric is the reference for DotBlockedF16Multi (and
// the generic level's kernel): dotBlockedF16Generic once per query.
func dotBlockedF16MultiGeneric(qs []float32, dim int, blocks []uint16, rows int, out []float32) {
	checkMultiArgs(qs, dim, rows, out)
	for i := 0; i < len(qs)/dim; i++ {
		dotBlockedF16Generic(qs[i*dim:(i+1)*dim], blocks, out[i*rows:(i+1)*rows])
	}
}

// checkMultiArgs panics on arguments DotBlockedF16Multi's REQUIRES rule
// out, before any kernel reads or writes past a slice.
func checkMultiArgs(qs []float32, dim, rows int, out []float32) {
	if dim < 1 || len(qs)%dim != 0 {
		panic("simd: DotBlockedF16Multi: len(qs) is not a multiple of dim")
	}
	if rows%BlockRows != 0 {
		panic("simd: DotBlockedF16Multi: rows is not a multiple of BlockRows")
	}
	if len(out) < len(qs)/dim*rows {
		panic("simd: DotBlockedF16Multi: out is shorter than queries × rows")
	}
}
