package simd

import (
	"math/rand/v2"
	"testing"
)

// TestBlockedLayout checks Blocked against its definition.
func TestBlockedLayout(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	for _, n := range []int{0, 1, 7, 8, 9, 23} {
		for _, dim := range []int{1, 3, 128} {
			rows := make([]float32, n*dim)
			randFloats(r, rows)
			blk := Blocked(rows, dim)
			nb := (n + BlockRows - 1) / BlockRows
			if len(blk) != nb*dim*BlockRows {
				t.Fatalf("n=%d dim=%d: len %d, want %d", n, dim, len(blk), nb*dim*BlockRows)
			}
			for b := 0; b < nb; b++ {
				for d := 0; d < dim; d++ {
					for j := 0; j < BlockRows; j++ {
						i := b*BlockRows + j
						var want float32
						if i < n {
							want = rows[i*dim+d]
						}
						if got := blk[(b*dim+d)*BlockRows+j]; got != want {
							t.Fatalf("n=%d dim=%d row %d coord %d: %g, want %g", n, dim, i, d, got, want)
						}
					}
				}
			}
		}
	}
}

// TestDotBlocked holds every level to the exact (float64) dot products
// and to the Go reference, over dimensions and row counts that exercise
// the 64-row loop, the single-block tail and both together.
func TestDotBlocked(t *testing.T) {
	forEachLevel(t, func(t testing.TB, level string) {
		r := rand.New(rand.NewPCG(33, 34))
		dims := []int{0, 1, 2, 3, 4, 7, 8, 16, 31, 128, 129}
		for _, dim := range dims {
			for _, n := range []int{0, 8, 16, 56, 64, 72, 120, 128, 136, 4096} {
				rows := make([]float32, n*dim)
				randFloats(r, rows)
				q := tail(r, dim, 1)
				blk := Blocked(rows, max(dim, 1))
				if dim == 0 {
					blk = nil
				}
				out := make([]float32, n)
				for i := range out {
					out[i] = 12345 // must be overwritten
				}
				DotBlocked(q, blk, out)
				ref := make([]float32, n)
				dotBlockedGeneric(q, blk, ref)
				for i := 0; i < n; i++ {
					want, abs := exactDot(q, rows[i*dim:(i+1)*dim])
					if !near(out[i], want, abs, dim) {
						t.Fatalf("%s dim=%d n=%d row %d: got %g want %g (tol %g)", level, dim, n, i, out[i], want, tol(dim, abs))
					}
					if !near(out[i], float64(ref[i]), abs, 2*dim) {
						t.Fatalf("%s dim=%d n=%d row %d: got %g, reference %g", level, dim, n, i, out[i], ref[i])
					}
				}
			}
		}
	})
}

// TestDotBlockedPanics: an out length that is not whole blocks, or blocks
// too short for it, is a caller bug: every level panics rather than read
// or write past a slice.
func TestDotBlockedPanics(t *testing.T) {
	forEachLevel(t, func(t testing.TB, level string) {
		for name, c := range map[string]struct{ q, blk, out []float32 }{
			"partial block": {make([]float32, 4), make([]float32, 4*16), make([]float32, 12)},
			"short blocks":  {make([]float32, 4), make([]float32, 4*16-1), make([]float32, 16)},
		} {
			func() {
				defer func() {
					if recover() == nil {
						t.Fatalf("%s %s: no panic", level, name)
					}
				}()
				DotBlocked(c.q, c.blk, c.out)
			}()
		}
	})
}
