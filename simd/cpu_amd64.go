package simd

import "github.com/klauspost/cpuid/v2"

// CPU features each level needs. cpuid reports AVX/AVX-512 features only
// when the OS also saves the wider registers (XCR0), so these checks cover
// both the CPU and the kernel. POPCNT (partitionBelowAVX2) comes with
// every AVX2 processor, but is checked rather than assumed.
var (
	hasAVX2   = cpuid.CPU.Supports(cpuid.AVX, cpuid.AVX2, cpuid.FMA3, cpuid.F16C, cpuid.POPCNT)
	hasAVX512 = hasAVX2 && cpuid.CPU.Supports(cpuid.AVX512F, cpuid.AVX512BW, cpuid.AVX512DQ, cpuid.AVX512VL)
)

func supportedLevels() []string {
	l := []string{LevelGeneric}
	if hasAVX2 {
		l = append(l, LevelAVX2)
	}
	if hasAVX512 {
		l = append(l, LevelAVX512)
	}
	return l
}

// bestLevel picks the default: AVX-512 on Intel and on AMD from Zen 5
// (family 0x1A) on, AVX2 elsewhere. AMD Zen 4 executes 512-bit operations
// as two 256-bit halves, so the wider kernels bring no throughput there and
// were often slower; Zen 5 has full-width 512-bit units, and on a Turin
// (family 0x1A) the AVX-512 kernels took 5–12% less CPU per 1M-vector
// IVF-PQ search than the AVX2 ones (BENCH.md, "Zen 5"). Other CPUs
// can still opt in with MEMRL_SIMD=avx512.
func bestLevel() string {
	switch {
	case hasAVX512 && preferAVX512(cpuid.CPU.VendorID, cpuid.CPU.Family):
		return LevelAVX512
	case hasAVX2:
		return LevelAVX2
	default:
		return LevelGeneric
	}
}

// zen5Family is AMD's CPU family of Zen 5 (and, so far, later) cores.
const zen5Family = 0x1A

// preferAVX512 reports whether a CPU of this vendor and family runs the
// 512-bit kernels faster than the 256-bit ones (given it has both).
func preferAVX512(v cpuid.Vendor, family int) bool {
	switch v {
	case cpuid.Intel:
		return true
	case cpuid.AMD:
		return family >= zen5Family
	}
	return false
}

func kernelsFor(level string) *kernels {
	switch level {
	case LevelAVX2:
		return avx2Kernels
	case LevelAVX512:
		return avx512Kernels
	default:
		return genericKernels
	}
}

var avx2Kernels = &kernels{
	level:     LevelAVX2,
	l2Sq:      func(a, b []float32) float32 { return pairCall(l2SqAVX2, a, b) },
	dot:       func(a, b []float32) float32 { return pairCall(dotAVX2, a, b) },
	l2SqBatch: func(q, rows, out []float32) { batchCall(l2SqBatchAVX2, q, rows, out) },
	dotBatch:  func(q, rows, out []float32) { batchCall(dotBatchAVX2, q, rows, out) },
	scanPQ8:   scanPQ8Call,
	fastScan4: func(codes []byte, m int, lut []byte, thresh uint16, sums []uint16, masks []uint32) {
		fastScanCall(fastScan4AVX2, codes, m, lut, thresh, sums, masks)
	},
	dotBlocked:    dotBlockedCall,
	dotBlockedF16: dotBlockedF16Call,
	min:           minCall,
	scoreMask:     scoreMaskCall,

	scoreMask16: scoreMask16Call,

	dotBlockedF16Multi: dotBlockedF16MultiCall,

	fastScan4Multi: func(codes []byte, m int, q *FastScan4Queries) {
		fastScan4MultiCall(fastScan4AVX2Call, codes, m, q)
	},

	coarseDist:   coarseDistCall,
	minBits:      minBitsCall,
	maskLE:       maskLECall,
	quantizeLUT4: quantizeLUT4Call,

	partitionBelow: partitionBelowCall,
}

// fastScan4AVX2Call is the AVX2 level's FastScan4.
func fastScan4AVX2Call(codes []byte, m int, lut []byte, thresh uint16, sums []uint16, masks []uint32) {
	fastScanCall(fastScan4AVX2, codes, m, lut, thresh, sums, masks)
}

// fastScan4AVX512Call is the AVX-512 level's FastScan4.
func fastScan4AVX512Call(codes []byte, m int, lut []byte, thresh uint16, sums []uint16, masks []uint32) {
	fastScanCall(fastScan4AVX512, codes, m, lut, thresh, sums, masks)
}

var avx512Kernels = &kernels{
	level:     LevelAVX512,
	l2Sq:      func(a, b []float32) float32 { return pairCall(l2SqAVX512, a, b) },
	dot:       func(a, b []float32) float32 { return pairCall(dotAVX512, a, b) },
	l2SqBatch: func(q, rows, out []float32) { batchCall(pick512(len(q), l2SqBatchAVX2, l2SqBatchAVX512), q, rows, out) },
	dotBatch:  func(q, rows, out []float32) { batchCall(pick512(len(q), dotBatchAVX2, dotBatchAVX512), q, rows, out) },
	scanPQ8:   scanPQ8Call,
	fastScan4: func(codes []byte, m int, lut []byte, thresh uint16, sums []uint16, masks []uint32) {
		fastScanCall(fastScan4AVX512, codes, m, lut, thresh, sums, masks)
	},
	// The 256-bit kernel: DotBlocked reads 8-row blocks, one ymm register
	// each, and is bound by loads rather than by vector width.
	dotBlocked:    dotBlockedCall,
	dotBlockedF16: dotBlockedF16Call,
	min:           minCall,
	// The 256-bit kernel too: 32 scores are four ymm registers, and the
	// pass is a small share of a scan.
	scoreMask: scoreMaskCall,

	scoreMask16: scoreMask16Call,

	dotBlockedF16Multi: dotBlockedF16MultiCall,

	// The AVX2 multi-query kernels (no 512-bit one was written: this
	// project's machines have no AVX-512 to measure it on); one query
	// goes to the AVX-512 FastScan4.
	fastScan4Multi: func(codes []byte, m int, q *FastScan4Queries) {
		fastScan4MultiCall(fastScan4AVX512Call, codes, m, q)
	},

	coarseDist:   coarseDistCall,
	minBits:      minBitsCall,
	maskLE:       maskLECall,
	quantizeLUT4: quantizeLUT4Call,

	partitionBelow: partitionBelowCall,
}

// pairCall checks the slices (panicking, as the Go version does, when b is
// shorter than a) and hands raw pointers to an assembly pair kernel.
func pairCall(f func(a, b *float32, n int) float32, a, b []float32) float32 {
	if len(a) == 0 {
		return 0
	}
	b = b[:len(a)]
	return f(&a[0], &b[0], len(a))
}

// batchCall checks the slices and hands raw pointers to an assembly batch
// kernel.
func batchCall(f func(q, rows *float32, dim int, out *float32, n int), q, rows, out []float32) {
	n, d := len(out), len(q)
	if n == 0 {
		return
	}
	if d == 0 {
		clear(out)
		return
	}
	rows = rows[:n*d]
	f(&q[0], &rows[0], d, &out[0], n)
}

// fastScanCall checks the slices against the documented REQUIRES
// (panicking like the Go version on short ones) and calls an assembly
// fast-scan kernel.
func fastScanCall(f func(codes *byte, groups int, lut *byte, thresh uint16, sums *uint16, masks *uint32, nblocks int),
	codes []byte, m int, lut []byte, thresh uint16, sums []uint16, masks []uint32) {
	nb, groups := len(masks), (m+1)/2
	if nb == 0 {
		return
	}
	if groups <= 0 {
		fastScan4Generic(codes, m, lut, thresh, sums, masks)
		return
	}
	codes = codes[:nb*groups*FastScanBlock]
	lut = lut[:groups*32]
	sums = sums[:nb*FastScanBlock]
	f(&codes[0], groups, &lut[0], thresh, &sums[0], &masks[0], nb)
}

// scanPQ8Call checks the slices and calls the assembly ADC scan.
func scanPQ8Call(codes []byte, m int, lut, out []float32) {
	n := len(out)
	if n == 0 {
		return
	}
	if m <= 0 {
		scanPQ8Go(codes, m, lut, out)
		return
	}
	codes = codes[:n*m]
	lut = lut[:m*256]
	scanPQ8AMD64(&codes[0], m, &lut[0], &out[0], n)
}

// pick512 returns the 256-bit batch kernel for rows shorter than one
// 512-bit register (PQ sub-vectors): there a 16-lane load would be mostly
// masked off and the extra fold of 8 accumulators costs more than it saves
// (measured on Zen 4; the avx512 level implies AVX2, so this is safe).
func pick512(dim int, k256, k512 func(q, rows *float32, dim int, out *float32, n int)) func(q, rows *float32, dim int, out *float32, n int) {
	if dim < 16 {
		return k256
	}
	return k512
}

// dotBlockedCall checks the slices (panicking like the Go version) and
// calls the AVX2 blocked dot-product kernel.
func dotBlockedCall(q, blocks, out []float32) {
	if blockedArgsOK("DotBlocked", q, out) {
		dotBlocked8AVX2(&q[0], &blocks[:len(out)*len(q)][0], len(q), &out[0], len(out)/BlockRows)
	}
}

// dotBlockedF16Call is dotBlockedCall for half-precision blocks.
func dotBlockedF16Call(q []float32, blocks []uint16, out []float32) {
	if blockedArgsOK("DotBlockedF16", q, out) {
		dotBlocked8F16AVX2(&q[0], &blocks[:len(out)*len(q)][0], len(q), &out[0], len(out)/BlockRows)
	}
}

// dotBlockedF16MultiCall checks the arguments (panicking like the Go
// version) and runs the four-query kernel over the queries in fours, and
// the one-query kernel over the last one to three.
func dotBlockedF16MultiCall(qs []float32, dim int, blocks []uint16, rows int, out []float32) {
	checkMultiArgs(qs, dim, rows, out)
	nq := len(qs) / dim
	if nq == 0 || rows == 0 {
		return
	}
	blocks = blocks[:rows*dim]
	i := 0
	for ; i+4 <= nq; i += 4 {
		o := out[i*rows : (i+4)*rows]
		dotBlocked4QF16AVX2(&qs[i*dim], dim, &blocks[0], rows/BlockRows, &o[0], rows*4)
	}
	for ; i < nq; i++ {
		dotBlocked8F16AVX2(&qs[i*dim], &blocks[0], dim, &out[i*rows], rows/BlockRows)
	}
}

// blockedArgsOK panics, as the references do, when len(out) is not a
// multiple of BlockRows, and reports whether a kernel has work: with no
// rows there is nothing to do, and with no dimensions every score is 0
// (out is cleared here).
func blockedArgsOK(name string, q, out []float32) bool {
	if len(out)%BlockRows != 0 {
		panic("simd: " + name + ": len(out) is not a multiple of BlockRows")
	}
	if len(out) == 0 {
		return false
	}
	if len(q) == 0 {
		clear(out)
		return false
	}
	return true
}

// minCall checks v (panicking like the Go version on an empty one) and
// calls the AVX2 minimum kernel.
func minCall(v []float32) float32 {
	_ = v[0]
	return minAVX2(&v[0], len(v))
}

// scoreMaskCall checks the slices (panicking like the Go version on short
// ones) and runs the AVX2 kernel over the whole blocks, then over a copy of
// a last partial block padded with zeros, whose extra bits it clears (the
// kernel must not read past the caller's slices; ivfpq's lists rarely end
// on a block boundary, and the plain loop there cost a fifth as much as the
// kernel over all the rest).
func scoreMaskCall(sums []uint16, scale, offset float32, terms []float32, bound float32, masks []uint32) {
	whole, tail := splitBlocks(sums, terms, masks)
	if whole > 0 {
		scoreMaskAVX2(&sums[0], &terms[0], scale, offset, bound, &masks[0], whole)
	}
	if tail > 0 {
		p := padBlock(sums, terms, whole)
		scoreMaskAVX2(&p.sums[0], &p.terms[0], scale, offset, bound, &p.mask, 1)
		masks[whole] = p.mask & (1<<tail - 1)
	}
}

// scoreMask16Call is scoreMaskCall for 16-bit terms.
func scoreMask16Call(sums []uint16, scale, offset float32, terms []uint16, tscale, bound float32, masks []uint32) {
	whole, tail := splitBlocks(sums, terms, masks)
	if whole > 0 {
		scoreMask16AVX2(&sums[0], &terms[0], scale, offset, tscale, bound, &masks[0], whole)
	}
	if tail > 0 {
		p := padBlock(sums, terms, whole)
		scoreMask16AVX2(&p.sums[0], &p.terms[0], scale, offset, tscale, bound, &p.mask, 1)
		masks[whole] = p.mask & (1<<tail - 1)
	}
}

// splitBlocks checks that terms and masks are long enough for sums
// (panicking like the Go version) and returns how many whole blocks of
// FastScanBlock sums there are and how many sums are left over after them.
func splitBlocks[T uint16 | float32](sums []uint16, terms []T, masks []uint32) (whole, tail int) {
	n := len(sums)
	_ = terms[:n]
	_ = masks[:(n+FastScanBlock-1)/FastScanBlock]
	return n / FastScanBlock, n % FastScanBlock
}

// paddedBlock is a zero-padded copy of a last partial block and the mask
// the kernel writes for it.
//
// The kernels are called directly with pointers into it, never through a
// func value: escape analysis cannot see through one, and the copy then
// moved to the heap, one allocation per list segment scanned (9% of a
// search in malloc and 13% more in the collector at 1M).
type paddedBlock[T uint16 | float32] struct {
	sums  [FastScanBlock]uint16
	terms [FastScanBlock]T
	mask  uint32
}

// padBlock copies the sums and terms from block whole on into a
// paddedBlock.
func padBlock[T uint16 | float32](sums []uint16, terms []T, whole int) (p paddedBlock[T]) {
	done := whole * FastScanBlock
	copy(p.sums[:], sums[done:])
	copy(p.terms[:], terms[done:len(sums)])
	return p
}
