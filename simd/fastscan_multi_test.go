package simd

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestFastScan4Multi compares FastScan4Multi at every level with the
// single-query reference, on random codes and tables: 1 to 4 queries,
// sub-space counts odd and even (an odd one's last group half used),
// 1 to 5 blocks, thresholds from 0 to 65535 differing between queries.
// Sums and masks are exactly sized and followed by sentinels.
func TestFastScan4Multi(t *testing.T) {
	forEachLevel(t, func(t testing.TB, level string) {
		r := rand.New(rand.NewPCG(29, 4))
		for _, m := range []int{1, 2, 3, 7, 16, 17, 32, 52, 63, 64, 255, 256} {
			for _, nb := range []int{0, 1, 2, 3, 5} {
				for nq := 1; nq <= FastScanMaxQueries; nq++ {
					for _, lutMax := range []int{15, 255} {
						checkFastScanMulti(t, r, level, m, nb, nq, lutMax)
					}
				}
			}
		}
	})
}

// TestFastScan4MultiMax: M=256 with every entry 255, the largest legal
// sum (65280), for every query of a call.
func TestFastScan4MultiMax(t *testing.T) {
	forEachLevel(t, func(t testing.TB, level string) {
		const m, nb = 256, 2
		r := rand.New(rand.NewPCG(29, 5))
		codes, _ := fsInput(r, m, nb, 255)
		var q FastScan4Queries
		q.N = FastScanMaxQueries
		for i := range q.N {
			q.LUT[i] = slices.Repeat([]byte{255}, m*16)
			q.Thresh[i] = 65281
			q.Sums[i] = make([]uint16, nb*FastScanBlock)
			q.Masks[i] = make([]uint32, nb)
		}
		FastScan4Multi(codes, m, &q)
		for i := range q.N {
			for j, s := range q.Sums[i] {
				if s != 65280 {
					t.Fatalf("%s query %d sum[%d] = %d, want 65280", level, i, j, s)
				}
			}
			for b, mask := range q.Masks[i] {
				if mask != 0xffffffff {
					t.Fatalf("%s query %d mask[%d] = %x, want all set", level, i, b, mask)
				}
			}
		}
	})
}

func checkFastScanMulti(t testing.TB, r *rand.Rand, level string, m, nb, nq, lutMax int) {
	codes, _ := fsInput(r, m, nb, lutMax)
	var q FastScan4Queries
	q.N = nq
	sumBufs := make([][]uint16, nq)
	maskBufs := make([][]uint32, nq)
	for i := range nq {
		_, q.LUT[i] = fsInput(r, m, 0, lutMax)
		// Thresholds: the extremes and ones that split a block.
		mid := m * lutMax / 2
		q.Thresh[i] = []uint16{0, 1, uint16(mid - mid/8), uint16(mid), uint16(mid + mid/8), 65535}[r.IntN(6)]
		sumBufs[i] = make([]uint16, nb*FastScanBlock+1)
		sumBufs[i][nb*FastScanBlock] = 0xbeef
		maskBufs[i] = make([]uint32, nb+1)
		maskBufs[i][nb] = 0xdeadbeef
		q.Sums[i] = sumBufs[i][: nb*FastScanBlock : nb*FastScanBlock]
		q.Masks[i] = maskBufs[i][:nb:nb]
	}
	FastScan4Multi(codes, m, &q)
	for i := range nq {
		what := fmt.Sprintf("%s m=%d nb=%d query %d of %d thresh=%d", level, m, nb, i, nq, q.Thresh[i])
		if sumBufs[i][nb*FastScanBlock] != 0xbeef || maskBufs[i][nb] != 0xdeadbeef {
			t.Fatalf("%s: wrote past sums or masks", what)
		}
		wantSums := make([]uint16, nb*FastScanBlock)
		wantMasks := make([]uint32, nb)
		fastScan4Generic(codes, m, q.LUT[i], q.Thresh[i], wantSums, wantMasks)
		if !slices.Equal(q.Sums[i], wantSums) {
			t.Fatalf("%s: sums\n got %v\nwant %v", what, q.Sums[i], wantSums)
		}
		if !slices.Equal(q.Masks[i], wantMasks) {
			t.Fatalf("%s: masks got %x want %x", what, q.Masks[i], wantMasks)
		}
	}
}

// BenchmarkFastScan4Multi scans 8 blocks (256 codes, one ivfpq scan
// chunk, L1 resident) for 4 queries per op, M=52 (memrl's SIFT shape):
// "loop" is four FastScan4 calls, "x2" two FastScan4Multi calls of 2
// queries, "x4" one of 4. codes/s counts a code once per query.
func BenchmarkFastScan4Multi(b *testing.B) {
	const nb, m, nq = 8, 52, 4
	r := rand.New(rand.NewPCG(1, 1))
	codes, _ := fsInput(r, m, nb, 255)
	var q FastScan4Queries
	for i := range nq {
		_, q.LUT[i] = fsInput(r, m, 0, 255)
		q.Thresh[i] = 65535
		q.Sums[i] = make([]uint16, nb*FastScanBlock)
		q.Masks[i] = make([]uint32, nb)
	}
	run := func(name string, f func()) {
		b.Run(name, func(b *testing.B) {
			benchLevels(b, func(b *testing.B) {
				for b.Loop() {
					f()
				}
				b.ReportMetric(float64(b.N)*nq*nb*FastScanBlock/b.Elapsed().Seconds(), "codes/s")
			})
		})
	}
	run("loop", func() {
		for i := range nq {
			FastScan4(codes, m, q.LUT[i], q.Thresh[i], q.Sums[i], q.Masks[i])
		}
	})
	run("x2", func() {
		var h FastScan4Queries
		h.N = 2
		for j := 0; j < nq; j += 2 {
			copy(h.LUT[:2], q.LUT[j:j+2])
			copy(h.Sums[:2], q.Sums[j:j+2])
			copy(h.Masks[:2], q.Masks[j:j+2])
			FastScan4Multi(codes, m, &h)
		}
	})
	run("x4", func() {
		q.N = nq
		FastScan4Multi(codes, m, &q)
	})
}
