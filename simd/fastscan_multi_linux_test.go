//go:build linux

package simd

import (
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"
)

// TestNoOverreadFastScanMulti: every slice FastScan4Multi reads or writes
// ends at an unmapped page, so a kernel touching a byte past any of them
// faults; and the call allocates nothing.
func TestNoOverreadFastScanMulti(t *testing.T) {
	forEachLevel(t, func(t testing.TB, level string) {
		r := rand.New(rand.NewPCG(29, 6))
		for _, m := range []int{1, 3, 16, 31, 52} {
			for _, nb := range []int{1, 2, 3} {
				for nq := 1; nq <= FastScanMaxQueries; nq++ {
					c, _ := fsInput(r, m, nb, 255)
					codes, fc := guarded(t, len(c))
					copy(codes, c)
					frees := []func(){fc}
					var q FastScan4Queries
					q.N = nq
					for i := range nq {
						_, l := fsInput(r, m, 0, 255)
						lut, fl := guarded(t, len(l))
						copy(lut, l)
						sb, fs := guarded(t, 2*nb*FastScanBlock)
						mb, fm := guarded(t, 4*nb)
						frees = append(frees, fl, fs, fm)
						q.LUT[i] = lut
						q.Thresh[i] = 1000
						q.Sums[i] = unsafe.Slice((*uint16)(unsafe.Pointer(&sb[0])), nb*FastScanBlock)
						q.Masks[i] = unsafe.Slice((*uint32)(unsafe.Pointer(&mb[0])), nb)
					}
					FastScan4Multi(codes, m, &q)
					for i := range nq {
						want := make([]uint16, nb*FastScanBlock)
						fastScan4Generic(codes, m, q.LUT[i], 1000, want, make([]uint32, nb))
						if !slices.Equal(q.Sums[i], want) {
							t.Fatalf("%s m=%d nb=%d query %d of %d: sums differ from reference", level, m, nb, i, nq)
						}
					}
					if a := testing.AllocsPerRun(20, func() { FastScan4Multi(codes, m, &q) }); a != 0 {
						t.Fatalf("%s: %v allocations per FastScan4Multi, want 0", level, a)
					}
					for _, f := range frees {
						f()
					}
				}
			}
		}
	})
}
