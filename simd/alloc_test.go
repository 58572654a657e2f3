package simd

import (
	"math/rand/v2"
	"testing"
)

// TestKernelsDoNotAllocate holds every level's search-path kernels to zero
// heap allocations, on lengths that end in a partial block (where the
// ScoreMask wrappers copy the tail into padded arrays). A search calls them
// once per list segment; an allocation there once cost a fifth of a 1M
// search in malloc and the collector.
func TestKernelsDoNotAllocate(t *testing.T) {
	forEachLevel(t, func(t testing.TB, level string) {
		r := rand.New(rand.NewPCG(7, 8))
		const n, dim, m = 77, 40, 6 // 77 = 2 whole blocks of 32 and 13 more
		nb := (n + FastScanBlock - 1) / FastScanBlock
		sums := make([]uint16, n, nb*FastScanBlock)
		terms := make([]float32, n)
		terms16 := make([]uint16, n)
		for i := range sums {
			sums[i] = uint16(r.Uint32())
			terms[i] = r.Float32()
			terms16[i] = uint16(r.Uint32())
		}
		masks := make([]uint32, nb)
		codes := make([]byte, nb*FastScanBlock*m/2)
		lut := make([]byte, m*16)
		q := make([]float32, dim)
		randFloats(r, q)
		rows := make([]float32, BlockRows*3*dim)
		randFloats(r, rows)
		blocks := Blocked(rows, dim)
		blocks16 := BlockedF16(rows, dim)
		out := make([]float32, BlockRows*3)
		for name, f := range map[string]func(){
			"ScoreMask":     func() { ScoreMask(sums, 0.5, 1, terms, 1e4, masks) },
			"ScoreMask16":   func() { ScoreMask16(sums, 0.5, 1, terms16, 0.25, 1e4, masks) },
			"FastScan4":     func() { FastScan4(codes, m, lut, 1000, sums[:nb*FastScanBlock], masks) },
			"DotBlocked":    func() { DotBlocked(q, blocks, out) },
			"DotBlockedF16": func() { DotBlockedF16(q, blocks16, out) },
			"L2Sq":          func() { _ = L2Sq(q, rows[:dim]) },
		} {
			if a := testing.AllocsPerRun(100, f); a != 0 {
				t.Errorf("%s %s: %v allocations per call, want 0", level, name, a)
			}
		}
	})
}
