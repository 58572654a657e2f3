package simd

// fastScanMultiArgs is what the multi-query fast-scan kernels read
// (fastscan_multi_amd64.s): INVARIANT: its layout matches the offsets
// there (lut at 0, sums at 32, masks at 64, thresh at 96), which
// TestFastScanMultiArgsLayout checks.
type fastScanMultiArgs struct {
	lut    [FastScanMaxQueries]*byte
	sums   [FastScanMaxQueries]*uint16
	masks  [FastScanMaxQueries]*uint32
	thresh [FastScanMaxQueries]uint64 // the threshold ^ 0x8000 (signed compare)
}

// Multi-query fast-scan kernels for 2, 3 and 4 queries. REQUIRES: groups
// >= 1, nblocks >= 1; args' first 2, 3 or 4 queries' pointers valid for
// groups*32 table bytes, nblocks*32 sums and nblocks masks; codes for
// nblocks*groups*32 bytes.

//go:noescape
func fastScan4x2AVX2(codes *byte, groups int, args *fastScanMultiArgs, nblocks int)

//go:noescape
func fastScan4x3AVX2(codes *byte, groups int, args *fastScanMultiArgs, nblocks int)

//go:noescape
func fastScan4x4AVX2(codes *byte, groups int, args *fastScanMultiArgs, nblocks int)

// fastScan4MultiCall checks q's slices against FastScan4Multi's REQUIRES
// (panicking on short ones, as the Go version does) and calls the AVX2
// kernel for q.N queries; one query goes to single, the level's FastScan4.
func fastScan4MultiCall(single func(codes []byte, m int, lut []byte, thresh uint16, sums []uint16, masks []uint32),
	codes []byte, m int, q *FastScan4Queries) {
	if q.N < 1 || q.N > FastScanMaxQueries {
		panic("simd: FastScan4Multi needs 1 to 4 queries")
	}
	nb, groups := len(q.Masks[0]), (m+1)/2
	if q.N == 1 || nb == 0 || groups <= 0 {
		for i := range q.N {
			single(codes, m, q.LUT[i], q.Thresh[i], q.Sums[i], q.Masks[i][:nb])
		}
		return
	}
	codes = codes[:nb*groups*FastScanBlock]
	var a fastScanMultiArgs
	for i := range q.N {
		lut := q.LUT[i][:groups*32]
		sums := q.Sums[i][:nb*FastScanBlock]
		masks := q.Masks[i][:nb]
		a.lut[i], a.sums[i], a.masks[i] = &lut[0], &sums[0], &masks[0]
		a.thresh[i] = uint64(q.Thresh[i] ^ 0x8000)
	}
	switch q.N {
	case 2:
		fastScan4x2AVX2(&codes[0], groups, &a, nb)
	case 3:
		fastScan4x3AVX2(&codes[0], groups, &a, nb)
	default:
		fastScan4x4AVX2(&codes[0], groups, &a, nb)
	}
}
