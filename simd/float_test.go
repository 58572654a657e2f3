package simd

import (
	"math"
	"math/rand/v2"
	"testing"
)

// testLens: every length 0..300 plus some large ones, so every main-loop
// and tail combination of every kernel width is exercised.
func testLens() []int {
	var l []int
	for n := 0; n <= 300; n++ {
		l = append(l, n)
	}
	return append(l, 511, 1000, 1536, 4099)
}

func TestPairKernels(t *testing.T) {
	forEachLevel(t, func(t testing.TB, level string) {
		r := rand.New(rand.NewPCG(1, 2))
		for _, n := range testLens() {
			for _, off := range []int{0, 1, 3} {
				a, b := tail(r, n, off), tail(r, n, off+2)
				want, abs := exactL2(a, b)
				if got := L2Sq(a, b); !near(got, want, abs, n) {
					t.Fatalf("%s L2Sq n=%d off=%d: got %g want %g (tol %g)", level, n, off, got, want, tol(n, abs))
				}
				if got, ref := L2Sq(a, b), l2SqGeneric(a, b); !near(got, float64(ref), abs, 2*n) {
					t.Fatalf("%s L2Sq n=%d: got %g, reference %g", level, n, got, ref)
				}
				want, abs = exactDot(a, b)
				if got := Dot(a, b); !near(got, want, abs, n) {
					t.Fatalf("%s Dot n=%d off=%d: got %g want %g (tol %g)", level, n, off, got, want, tol(n, abs))
				}
				if got, ref := Dot(a, b), dotGeneric(a, b); !near(got, float64(ref), abs, 2*n) {
					t.Fatalf("%s Dot n=%d: got %g, reference %g", level, n, got, ref)
				}
			}
		}
	})
}

// TestPairLongerB: b may be longer than a; only len(a) elements count.
func TestPairLongerB(t *testing.T) {
	forEachLevel(t, func(t testing.TB, level string) {
		a := []float32{1, 2, 3}
		b := []float32{1, 2, 4, 100, 100}
		if got := L2Sq(a, b); got != 1 {
			t.Fatalf("%s L2Sq = %g, want 1", level, got)
		}
		if got := Dot(a, b); got != 17 {
			t.Fatalf("%s Dot = %g, want 17", level, got)
		}
	})
}

// TestPairShortBPanics: a too-short b is a caller bug; every level must
// panic rather than read past b.
func TestPairShortBPanics(t *testing.T) {
	forEachLevel(t, func(t testing.TB, level string) {
		for name, f := range map[string]func(a, b []float32) float32{"L2Sq": L2Sq, "Dot": Dot} {
			func() {
				defer func() {
					if recover() == nil {
						t.Fatalf("%s %s: no panic with len(b) < len(a)", level, name)
					}
				}()
				f(make([]float32, 9), make([]float32, 8))
			}()
		}
	})
}

func TestBatchKernels(t *testing.T) {
	forEachLevel(t, func(t testing.TB, level string) {
		r := rand.New(rand.NewPCG(3, 4))
		dims := []int{0}
		for d := 1; d <= 70; d++ {
			dims = append(dims, d)
		}
		dims = append(dims, 96, 127, 128, 300, 768)
		for _, d := range dims {
			for _, n := range []int{0, 1, 2, 7, 8, 9, 15, 16, 17, 23, 37} {
				q := tail(r, d, 1)
				rows := tail(r, n*d, 3)
				// out is exactly sized, followed by a sentinel that
				// must survive.
				buf := make([]float32, n+1)
				buf[n] = 12345
				out := buf[:n:n]
				for _, op := range []struct {
					name  string
					batch func(q, rows, out []float32)
					exact func(a, b []float32) (float64, float64)
					ref   func(a, b []float32) float32
				}{
					{"L2SqBatch", L2SqBatch, exactL2, l2SqGeneric},
					{"DotBatch", DotBatch, exactDot, dotGeneric},
				} {
					for i := range out {
						out[i] = float32(math.NaN())
					}
					op.batch(q, rows, out)
					if buf[n] != 12345 {
						t.Fatalf("%s %s d=%d n=%d wrote past out", level, op.name, d, n)
					}
					for i := range out {
						row := rows[i*d : (i+1)*d]
						want, abs := op.exact(q, row)
						if !near(out[i], want, abs, d) {
							t.Fatalf("%s %s d=%d n=%d row %d: got %g want %g", level, op.name, d, n, i, out[i], want)
						}
						if ref := op.ref(q, row); !near(out[i], float64(ref), abs, 2*d) {
							t.Fatalf("%s %s d=%d n=%d row %d: got %g reference %g", level, op.name, d, n, i, out[i], ref)
						}
					}
				}
			}
		}
	})
}

func TestBatchShortRowsPanics(t *testing.T) {
	forEachLevel(t, func(t testing.TB, level string) {
		defer func() {
			if recover() == nil {
				t.Fatalf("%s: no panic with len(rows) < len(out)*len(q)", level)
			}
		}()
		L2SqBatch(make([]float32, 4), make([]float32, 11), make([]float32, 3))
	})
}

func TestPQLUT(t *testing.T) {
	forEachLevel(t, func(t testing.TB, level string) {
		r := rand.New(rand.NewPCG(5, 6))
		for _, m := range []int{1, 2, 3, 8, 16, 32} {
			for _, dsub := range []int{1, 2, 3, 4, 5, 8, 12, 16} {
				for _, ksub := range []int{16, 256} {
					q := tail(r, m*dsub, 1)
					cents := tail(r, m*ksub*dsub, 1)
					got := make([]float32, m*ksub)
					PQLUTL2(q, cents, m, ksub, got)
					want := make([]float32, m*ksub)
					pqLUTL2Generic(q, cents, m, ksub, want)
					checkLUT(t, level, "PQLUTL2", q, cents, m, ksub, got, want, exactL2)
					PQLUTDot(q, cents, m, ksub, got)
					pqLUTDotGeneric(q, cents, m, ksub, want)
					checkLUT(t, level, "PQLUTDot", q, cents, m, ksub, got, want, exactDot)
				}
			}
		}
	})
}

func checkLUT(t testing.TB, level, name string, q, cents []float32, m, ksub int, got, want []float32,
	exact func(a, b []float32) (float64, float64)) {
	dsub := len(q) / m
	for s := 0; s < m; s++ {
		for c := 0; c < ksub; c++ {
			i := s*ksub + c
			_, abs := exact(q[s*dsub:(s+1)*dsub], cents[i*dsub:(i+1)*dsub])
			if !near(got[i], float64(want[i]), abs, 2*dsub) {
				t.Fatalf("%s %s m=%d dsub=%d ksub=%d lut[%d]: got %g want %g", level, name, m, dsub, ksub, i, got[i], want[i])
			}
		}
	}
}
