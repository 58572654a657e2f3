//go:build linux

package simd

import (
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"
	"unsafe"
)

// guarded maps two pages, makes the second inaccessible, and returns a
// buffer of n bytes (n <= one page) that ends exactly at the inaccessible
// page: any read past its end faults. free unmaps it.
func guarded(t testing.TB, n int) (buf []byte, free func()) {
	page := syscall.Getpagesize()
	if n > page {
		t.Fatalf("guarded: %d > page size %d", n, page)
	}
	mem, err := syscall.Mmap(-1, 0, 2*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	if err := syscall.Mprotect(mem[page:], syscall.PROT_NONE); err != nil {
		t.Fatalf("mprotect: %v", err)
	}
	return mem[page-n : page : page], func() { syscall.Munmap(mem) }
}

func guardedFloats(t testing.TB, r *rand.Rand, n int) ([]float32, func()) {
	b, free := guarded(t, 4*n)
	if n == 0 {
		return nil, free
	}
	f := unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), n)
	randFloats(r, f)
	return f, free
}

// TestNoOverreadFloat places every input so that it ends at an unmapped
// page: a kernel that reads one element too many crashes the test.
func TestNoOverreadFloat(t *testing.T) {
	forEachLevel(t, func(t testing.TB, level string) {
		r := rand.New(rand.NewPCG(7, 8))
		for n := 1; n <= 80; n++ {
			a, fa := guardedFloats(t, r, n)
			b, fb := guardedFloats(t, r, n)
			L2Sq(a, b)
			Dot(a, b)
			for _, rowsN := range []int{1, 7, 8, 9} {
				if n*rowsN*4 > syscall.Getpagesize() {
					continue
				}
				rows, fr := guardedFloats(t, r, n*rowsN)
				out, fo := guardedFloats(t, r, rowsN)
				L2SqBatch(a, rows, out)
				DotBatch(a, rows, out)
				fr()
				fo()
			}
			fa()
			fb()
		}
	})
}

// TestNoOverreadFastScan puts the codes, the LUT, sums and masks each
// against an unmapped page.
func TestNoOverreadFastScan(t *testing.T) {
	forEachLevel(t, func(t testing.TB, level string) {
		r := rand.New(rand.NewPCG(13, 14))
		for _, m := range []int{1, 2, 3, 16, 31, 32} {
			for _, nb := range []int{1, 2, 3} {
				c, l := fsInput(r, m, nb, 255)
				codes, fc := guarded(t, len(c))
				copy(codes, c)
				lut, fl := guarded(t, len(l))
				copy(lut, l)
				sb, fs := guarded(t, 2*nb*FastScanBlock)
				mb, fm := guarded(t, 4*nb)
				sums := unsafe.Slice((*uint16)(unsafe.Pointer(&sb[0])), nb*FastScanBlock)
				masks := unsafe.Slice((*uint32)(unsafe.Pointer(&mb[0])), nb)
				FastScan4(codes, m, lut, 1000, sums, masks)
				want := make([]uint16, len(sums))
				fastScan4Generic(codes, m, lut, 1000, want, make([]uint32, nb))
				if !slices.Equal(sums, want) {
					t.Fatalf("%s m=%d nb=%d: sums differ from reference", level, m, nb)
				}
				fc()
				fl()
				fs()
				fm()
			}
		}
	})
}

// TestPrefetchAtPageEnd prefetches slices that end at an unmapped page:
// the kernel must touch only lines the slice covers (a prefetch would not
// fault anyway, so this checks that nothing else reads there).
func TestPrefetchAtPageEnd(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	for n := 1; n <= 80; n++ {
		v, free := guardedFloats(t, r, n)
		Prefetch(v)
		free()
	}
}

// TestNoOverreadScoreMask puts the sums, terms and masks each against an
// unmapped page.
func TestNoOverreadScoreMask(t *testing.T) {
	forEachLevel(t, func(t testing.TB, level string) {
		r := rand.New(rand.NewPCG(27, 28))
		for _, n := range []int{1, 31, 32, 33, 64, 95, 256} {
			sb, fs := guarded(t, 2*n)
			sums := unsafe.Slice((*uint16)(unsafe.Pointer(&sb[0])), n)
			for i := range sums {
				sums[i] = uint16(r.Uint32())
			}
			terms, ft := guardedFloats(t, r, n)
			nb := (n + FastScanBlock - 1) / FastScanBlock
			mb, fm := guarded(t, 4*nb)
			masks := unsafe.Slice((*uint32)(unsafe.Pointer(&mb[0])), nb)
			ScoreMask(sums, 0.5, 1, terms, 100, masks)
			fs()
			ft()
			fm()
		}
	})
}

// TestNoOverreadScoreMask16 puts the sums, terms and masks each against an
// unmapped page, and checks the bits against the reference.
func TestNoOverreadScoreMask16(t *testing.T) {
	forEachLevel(t, func(t testing.TB, level string) {
		r := rand.New(rand.NewPCG(29, 30))
		for _, n := range []int{1, 31, 32, 33, 64, 95, 256} {
			sb, fs := guarded(t, 2*n)
			sums := unsafe.Slice((*uint16)(unsafe.Pointer(&sb[0])), n)
			tb, ft := guarded(t, 2*n)
			terms := unsafe.Slice((*uint16)(unsafe.Pointer(&tb[0])), n)
			for i := range sums {
				sums[i], terms[i] = uint16(r.Uint32()), uint16(r.Uint32())
			}
			nb := (n + FastScanBlock - 1) / FastScanBlock
			mb, fm := guarded(t, 4*nb)
			masks := unsafe.Slice((*uint32)(unsafe.Pointer(&mb[0])), nb)
			ScoreMask16(sums, 0.5, 1, terms, 0.25, 20000, masks)
			want := make([]uint32, nb)
			scoreMask16Generic(sums, 0.5, 1, terms, 0.25, 20000, want)
			if !slices.Equal(masks, want) {
				t.Fatalf("%s n=%d: masks %#x, reference %#x", level, n, masks, want)
			}
			fs()
			ft()
			fm()
		}
	})
}

// TestNoOverreadDotBlocked puts the query, the blocks and the output each
// against an unmapped page.
func TestNoOverreadDotBlocked(t *testing.T) {
	forEachLevel(t, func(t testing.TB, level string) {
		r := rand.New(rand.NewPCG(25, 26))
		for _, dim := range []int{1, 3, 8, 9} {
			for _, n := range []int{8, 16, 64, 72} {
				q, fq := guardedFloats(t, r, dim)
				blk, fb := guardedFloats(t, r, n*dim)
				out, fo := guardedFloats(t, r, n)
				DotBlocked(q, blk, out)
				fq()
				fb()
				fo()
			}
		}
	})
}

// TestNoOverreadMin puts v against an unmapped page.
func TestNoOverreadMin(t *testing.T) {
	forEachLevel(t, func(t testing.TB, level string) {
		r := rand.New(rand.NewPCG(27, 28))
		for n := 1; n <= 80; n++ {
			v, free := guardedFloats(t, r, n)
			if got, want := Min(v), minGeneric(v); got != want {
				t.Fatalf("%s n=%d: %g, reference %g", level, n, got, want)
			}
			free()
		}
	})
}

// TestNoOverreadDotBlockedF16 puts the query, the half-precision blocks and
// the output each against an unmapped page.
func TestNoOverreadDotBlockedF16(t *testing.T) {
	forEachLevel(t, func(t testing.TB, level string) {
		r := rand.New(rand.NewPCG(29, 30))
		for _, dim := range []int{1, 3, 8, 9} {
			for _, n := range []int{8, 16, 64, 72} {
				q, fq := guardedFloats(t, r, dim)
				b, fb := guarded(t, 2*n*dim)
				blk := unsafe.Slice((*uint16)(unsafe.Pointer(&b[0])), n*dim)
				out, fo := guardedFloats(t, r, n)
				DotBlockedF16(q, blk, out)
				fq()
				fb()
				fo()
			}
		}
	})
}
