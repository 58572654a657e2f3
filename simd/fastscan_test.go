package simd

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// fsInput builds nb blocks of random 4-bit codes for m sub-spaces in the
// documented layout (high nibbles of an odd m's last group zero) and a LUT
// of ceil(m/2)*2 rows whose padding row is zero. lutMax bounds the entries.
func fsInput(r *rand.Rand, m, nb int, lutMax int) (codes, lut []byte) {
	groups := (m + 1) / 2
	codes = make([]byte, nb*groups*FastScanBlock)
	for b := 0; b < nb; b++ {
		for p := 0; p < groups; p++ {
			for j := 0; j < FastScanBlock; j++ {
				lo, hi := byte(r.IntN(16)), byte(r.IntN(16))
				if 2*p+1 >= m {
					hi = 0
				}
				codes[(b*groups+p)*FastScanBlock+j] = lo | hi<<4
			}
		}
	}
	lut = make([]byte, groups*2*16)
	for i := range m * 16 {
		lut[i] = byte(r.IntN(lutMax + 1))
	}
	return codes, lut
}

func TestFastScan4(t *testing.T) {
	forEachLevel(t, func(t testing.TB, level string) {
		r := rand.New(rand.NewPCG(9, 10))
		ms := []int{1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 32, 33, 48, 63, 64, 128, 255, 256}
		for _, m := range ms {
			for _, nb := range []int{0, 1, 2, 3, 5} {
				for _, lutMax := range []int{15, 255} {
					codes, lut := fsInput(r, m, nb, lutMax)
					// Thresholds: extremes and ones that split the
					// block (around the typical sum).
					mid := uint16(m * lutMax / 2)
					for _, th := range []uint16{0, 1, mid - mid/8, mid, mid + mid/8, 65535} {
						checkFastScan(t, level, codes, m, lut, th, nb)
					}
				}
			}
		}
	})
}

// TestFastScan4Max: M=256 with every entry 255 gives the largest legal sum,
// 65280, which must come out exact (no signed overflow in any lane).
func TestFastScan4Max(t *testing.T) {
	forEachLevel(t, func(t testing.TB, level string) {
		const m, nb = 256, 2
		r := rand.New(rand.NewPCG(11, 12))
		codes, lut := fsInput(r, m, nb, 255)
		for i := range lut {
			lut[i] = 255
		}
		sums := checkFastScan(t, level, codes, m, lut, 65281, nb)
		for j, s := range sums {
			if s != 65280 {
				t.Fatalf("%s sum[%d] = %d, want 65280", level, j, s)
			}
		}
		checkFastScan(t, level, codes, m, lut, 65280, nb)
	})
}

// checkFastScan runs FastScan4 and the reference and compares them exactly;
// sums and masks are exactly sized and followed by sentinels.
func checkFastScan(t testing.TB, level string, codes []byte, m int, lut []byte, th uint16, nb int) []uint16 {
	sumBuf := make([]uint16, nb*FastScanBlock+1)
	sumBuf[nb*FastScanBlock] = 0xbeef
	maskBuf := make([]uint32, nb+1)
	maskBuf[nb] = 0xdeadbeef
	sums, masks := sumBuf[:nb*FastScanBlock:nb*FastScanBlock], maskBuf[:nb:nb]
	FastScan4(codes, m, lut, th, sums, masks)
	wantSums := make([]uint16, nb*FastScanBlock)
	wantMasks := make([]uint32, nb)
	fastScan4Generic(codes, m, lut, th, wantSums, wantMasks)
	what := fmt.Sprintf("%s m=%d nb=%d thresh=%d", level, m, nb, th)
	if sumBuf[nb*FastScanBlock] != 0xbeef || maskBuf[nb] != 0xdeadbeef {
		t.Fatalf("%s: wrote past sums or masks", what)
	}
	if !slices.Equal(sums, wantSums) {
		t.Fatalf("%s: sums\n got %v\nwant %v", what, sums, wantSums)
	}
	if !slices.Equal(masks, wantMasks) {
		t.Fatalf("%s: masks got %x want %x", what, masks, wantMasks)
	}
	return sums
}
