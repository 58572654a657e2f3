package simd

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDotBlockedF16Multi holds every level's several-query kernel to the
// one-query kernel of the same level bit for bit (ivfpq's batch search
// must choose exactly the lists its one-query search chooses), and to the
// Go reference and the exact dot products within rounding, over query
// counts that exercise the four-query kernel, its one-block tail and the
// one-query remainder.
func TestDotBlockedF16Multi(t *testing.T) {
	forEachLevel(t, func(t testing.TB, level string) {
		r := rand.New(rand.NewPCG(291, 292))
		for _, dim := range []int{1, 2, 3, 7, 31, 128, 129} {
			for _, n := range []int{0, 8, 16, 24, 56, 136, 2048} {
				for _, nq := range []int{0, 1, 3, 4, 5, 8, 9} {
					rows := make([]float32, n*dim)
					randFloats(r, rows)
					qs := tail(r, nq*dim, 1)
					blk := BlockedF16(rows, dim)
					rounded := make([]float32, len(rows))
					for i, v := range rows {
						rounded[i] = FromFloat16(ToFloat16(v))
					}
					out := make([]float32, nq*n+3)
					for i := range out {
						out[i] = 12345 // must be overwritten, but not past nq·n
					}
					DotBlockedF16Multi(qs, dim, blk, n, out)
					for i := range 3 {
						if out[nq*n+i] != 12345 {
							t.Fatalf("%s dim=%d n=%d nq=%d: wrote past the queries' scores", level, dim, n, nq)
						}
					}
					one := make([]float32, n)
					ref := make([]float32, nq*n)
					dotBlockedF16MultiGeneric(qs, dim, blk, n, ref)
					for i := range nq {
						q := qs[i*dim : (i+1)*dim]
						DotBlockedF16(q, blk, one)
						for j := range n {
							got := out[i*n+j]
							if math.Float32bits(got) != math.Float32bits(one[j]) {
								t.Fatalf("%s dim=%d n=%d nq=%d query %d row %d: %g, one-query kernel %g", level, dim, n, nq, i, j, got, one[j])
							}
							if n > 136 && j%17 != 0 {
								continue // bit equality for every row; the sums' accuracy for a sample of the large shape
							}
							want, abs := exactDot(q, rounded[j*dim:(j+1)*dim])
							if !near(got, want, abs, dim) || !near(got, float64(ref[i*n+j]), abs, 2*dim) {
								t.Fatalf("%s dim=%d n=%d nq=%d query %d row %d: %g, exact %g, reference %g", level, dim, n, nq, i, j, got, want, ref[i*n+j])
							}
						}
					}
				}
			}
		}
	})
}

// TestDotBlockedF16MultiPanics: arguments outside the REQUIRES panic on
// every level rather than read or write past a slice.
func TestDotBlockedF16MultiPanics(t *testing.T) {
	forEachLevel(t, func(t testing.TB, level string) {
		blk := make([]uint16, 16*4)
		for name, c := range map[string]struct {
			qs        []float32
			dim, rows int
			out       []float32
		}{
			"ragged queries": {make([]float32, 7), 4, 16, make([]float32, 32)},
			"partial block":  {make([]float32, 8), 4, 12, make([]float32, 24)},
			"short out":      {make([]float32, 8), 4, 16, make([]float32, 31)},
			"short blocks":   {make([]float32, 8), 4, 24, make([]float32, 48)},
			"zero dim":       {make([]float32, 8), 0, 16, make([]float32, 32)},
		} {
			func() {
				defer func() {
					if recover() == nil {
						t.Fatalf("%s %s: no panic", level, name)
					}
				}()
				DotBlockedF16Multi(c.qs, c.dim, blk, c.rows, c.out)
			}()
		}
	})
}

// BenchmarkDotBlockedF16Multi: a coarse step of 64 queries over 2,048
// centroids of 128 dimensions, query by query and four at a time.
func BenchmarkDotBlockedF16Multi(b *testing.B) {
	const dim, n, nq = 128, 2048, 64
	r := rand.New(rand.NewPCG(1, 2))
	rows := make([]float32, n*dim)
	randFloats(r, rows)
	qs := make([]float32, nq*dim)
	randFloats(r, qs)
	blk := BlockedF16(rows, dim)
	out := make([]float32, nq*n)
	b.Run("one-by-one", func(b *testing.B) {
		for b.Loop() {
			for i := range nq {
				DotBlockedF16(qs[i*dim:(i+1)*dim], blk, out[i*n:(i+1)*n])
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*nq), "ns/query")
	})
	b.Run("multi", func(b *testing.B) {
		for b.Loop() {
			DotBlockedF16Multi(qs, dim, blk, n, out)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*nq), "ns/query")
	})
}
