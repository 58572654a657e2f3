package simd

// FastScanMaxQueries is how many queries one FastScan4Multi call scores.
const FastScanMaxQueries = 4

// FastScan4Queries describes the queries of one FastScan4Multi call: query
// i < N has the byte table LUT[i] and threshold Thresh[i], and receives
// Sums[i] and Masks[i], as FastScan4's lut, thresh, sums and masks.
// Callers keep one in their scratch and refill it: the call allocates
// nothing.
type FastScan4Queries struct {
	N      int // 1..FastScanMaxQueries
	LUT    [FastScanMaxQueries][]byte
	Thresh [FastScanMaxQueries]uint16
	Sums   [FastScanMaxQueries][]uint16
	Masks  [FastScanMaxQueries][]uint32
}

// FastScan4Multi scores nblocks blocks of 4-bit codes for q.N queries at
// once: for each i < q.N it leaves in q.Sums[i] and q.Masks[i] exactly what
// FastScan4(codes, m, q.LUT[i], q.Thresh[i], q.Sums[i], q.Masks[i][:nblocks])
// would, but reads each block of codes, and splits its nibbles, once for
// all of them. nblocks is len(q.Masks[0]).
//
// Why: a batch search scans a list for every query of the batch that
// probes it (ivfpq/batch.go); at 4 queries a group of 32 codes costs 4
// shared instructions plus 10 a query instead of 14 a query.
//
// REQUIRES: 1 <= q.N <= FastScanMaxQueries; for each i < q.N, the slices
// are as FastScan4 requires for nblocks blocks (len(q.Masks[i]) >= nblocks).
// The kernel panics, as FastScan4 does, on a short slice.
func FastScan4Multi(codes []byte, m int, q *FastScan4Queries) {
	cur.Load().fastScan4Multi(codes, m, q)
}

// fastScan4MultiGeneric is the reference for FastScan4Multi: one
// FastScan4 reference per query.
func fastScan4MultiGeneric(codes []byte, m int, q *FastScan4Queries) {
	if q.N < 1 || q.N > FastScanMaxQueries {
		panic("simd: FastScan4Multi needs 1 to 4 queries")
	}
	nb := len(q.Masks[0])
	for i := range q.N {
		fastScan4Generic(codes, m, q.LUT[i], q.Thresh[i], q.Sums[i], q.Masks[i][:nb])
	}
}
