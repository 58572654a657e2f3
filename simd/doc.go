// Package simd holds the numeric kernels that phase-1 search spends its time
// in: squared L2 distance and dot product over float32 vectors (one pair, or
// one query against many contiguous rows), product-quantization look-up table
// construction, the 8-bit ADC scan and the 4-bit fast-scan block kernel.
//
// Every kernel has a plain Go reference (the *Generic functions in
// generic.go); tests hold every other implementation to it.
//
// # Levels and dispatch
//
// Three kernel sets ("levels") exist:
//
//	generic  portable Go (the references, plus an unrolled ScanPQ8)
//	avx2     amd64 assembly for AVX2 + FMA3 (256-bit)
//	avx512   amd64 assembly for AVX-512 F/BW/DQ/VL (512-bit; byte shuffles
//	         and opmask compares need BW)
//
// The package picks one at init with github.com/klauspost/cpuid (which also
// checks that the OS saves the wide registers): avx512 on Intel CPUs that
// have it, avx2 on any other CPU with AVX2 and FMA, generic elsewhere and on
// every other architecture. AVX-512 is not the default on AMD: Zen 4 splits
// 512-bit operations into two 256-bit halves, so the wide kernels bring no
// speed there (BENCH.md has this package's figures on a Zen 4).
//
// The environment variable MEMRL_SIMD=generic|avx2|avx512 forces a level at
// start. A name that is unknown, or that the CPU cannot run, is refused: the
// package keeps the automatic choice, prints one warning line to stderr, and
// EnvError returns the reason (ErrUnknownLevel or ErrUnsupportedLevel), so a
// server can report it; it never runs instructions the CPU lacks.
//
// Level reports the set in use, Levels what the CPU supports, and SetLevel
// switches at run time (for tests and benchmarks). The current set is one
// atomic pointer, so switching while kernels run is race-free; each call
// uses the set it loaded.
//
// Exported functions check their slices like the Go references do (a short
// input panics with an index error) and then hand raw pointers to the
// assembly, which reads and writes exactly the elements covered: vector
// tails use masked loads (VMASKMOVPS, AVX-512 opmasks), never a read past
// the end of a slice.
//
// The amd64 kernels use VEX (and EVEX) instructions only, wherever a vector
// register is named, and end with VZEROUPPER: a legacy-SSE instruction that
// writes an X register while a Y register's upper half holds data cost
// about 110 ns, each time, on a Zen 3 VM, and the fast-scan kernels paid it
// on every call until constants were broadcast from memory (BENCH.md, "SSE
// after AVX"; TestNoLegacySSE checks the rule).
//
// # Kernels
//
// L2Sq and Dot keep four independent vector accumulators. The batch forms
// score 8 rows at a time with one accumulator per row, loading each query
// chunk once, and reduce the 8 accumulators together with a horizontal-add
// tree; this keeps small dimensions (PQ sub-vectors of 2 to 16 floats) fast,
// where one call or one horizontal sum per row would dominate. PQLUTL2 and
// PQLUTDot are one batch call per sub-space. Float results differ from the
// references only by summation order.
//
// DotBlocked scores a query against rows in the blocked layout (Blocked:
// blocks of BlockRows rows stored coordinate-major, [dim][8]), 64 rows per
// loop with one broadcast of each query coordinate and no horizontal sums;
// DotBlockedF16 does the same over half-precision rows (BlockedF16,
// ToFloat16: round to nearest even), widened exactly by F16C's VCVTPH2PS;
// ivfpq's coarse step ranks its lists with it and precomputed centroid
// norms, reading half the bytes. Both the avx2 and avx512 levels run the
// 256-bit kernels (generic runs the references); the avx2 level requires
// F16C, which every AVX2 CPU has.
//
// Prefetch issues a cache prefetch for every line of a slice (a no-op off
// amd64): ivfpq prefetches all its re-rank rows before scoring them, so
// their cache and TLB misses overlap.
//
// Min is the smallest of a slice (four 8-lane VMINPS accumulators).
//
// ScoreMask finishes a 4-bit scan of an L2 index: it turns FastScan4's
// 16-bit sums into full float scores, each with its vector's stored term,
// and compares them with the worst candidate, eight at a time (AVX2 at both
// AVX levels), giving the same bits as the scalar expression it documents.
// ScoreMask16 is the same with 16-bit fixed-point terms (ivfpq's saved
// indexes, format version 4): both the sums and the terms are widened and
// converted (VPMOVZXWD, VCVTDQ2PS), each product rounded, then added in the
// reference's order.
//
// The coarse step's passes and the 4-bit table's quantization (select.go;
// AVX2 at both AVX levels, bit for bit their references): CoarseDist turns
// a query's dot products with the centroids into squared distances,
// MinBits keeps running minimums of float bits read as integers (ivfpq's
// probe-selection bound), MaskLE sets a bit for each value at most a
// bound (VCMPPS, VMOVMSKPS), and QuantizeLUT4 maps a float table's rows to
// bytes against their minimums and the widest row's range (VMINPS/VMAXPS
// per row, then VCVTTPS2DQ and two packs), where the Go reference's
// comparisons branch on the data. PartitionBelow is a quickselect's
// partition step (partition.go, ivfpq's candidate cuts): each vector of
// eight scores is turned into order keys, compared with the limit, and
// packed below/above with VPERMD by a 256-entry table of lane orders,
// the scores below in place and the others through the caller's scratch,
// both in input order as the reference leaves them; without scratch it is
// Lomuto's in-place partition on every level.
//
// ScanPQ8 is scalar code unrolled over four sub-spaces (the loads of code
// bytes and LUT entries bound it, so a gather would not help). FastScan4
// uses byte shuffles (VPSHUFB) as 16-entry table look-ups, 32 vectors per
// 256-bit shuffle, and 16-bit accumulators; its results are bit-exact.
// FastScan4Multi is FastScan4 for up to four queries over the same codes
// (ivfpq's batch search): each group of 32 code bytes is loaded and split
// into nibbles once and looked up in every query's tables, each query's
// sums kept in two registers (AVX2 at both AVX levels; one query goes to
// FastScan4). Its sums and masks are FastScan4's, bit for bit.
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
