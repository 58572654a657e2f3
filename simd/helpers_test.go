package simd

import (
	"math"
	"math/rand/v2"
	"testing"
)

// forEachLevel runs f once per kernel level the CPU supports, with that
// level forced, and restores the starting level afterwards.
func forEachLevel(t testing.TB, f func(t testing.TB, level string)) {
	start := Level()
	defer func() {
		if err := SetLevel(start); err != nil {
			t.Fatalf("restore level %s: %v", start, err)
		}
	}()
	for _, l := range Levels() {
		if err := SetLevel(l); err != nil {
			t.Fatalf("SetLevel(%s): %v", l, err)
		}
		if Level() != l {
			t.Fatalf("Level() = %s after SetLevel(%s)", Level(), l)
		}
		f(t, l)
	}
}

// randFloats fills s with values whose magnitudes span several orders
// (1e-3 to 1e3), with random signs, so that summation order matters.
func randFloats(r *rand.Rand, s []float32) {
	for i := range s {
		mag := math.Pow(10, r.Float64()*6-3)
		s[i] = float32(r.NormFloat64() * mag)
	}
}

// tail returns a slice of exactly n floats starting at an odd offset of a
// fresh allocation, with capacity n, so it is unaligned and ends at its
// backing array's end.
func tail(r *rand.Rand, n, off int) []float32 {
	b := make([]float32, off+n)
	randFloats(r, b)
	return b[off : off+n : off+n]
}

// exactL2 and exactDot compute in float64 and return the result with the
// sum of the absolute values of the terms.
func exactL2(a, b []float32) (sum, abs float64) {
	for i := range a {
		d := float64(a[i]) - float64(b[i])
		sum += d * d
	}
	return sum, sum
}

func exactDot(a, b []float32) (sum, abs float64) {
	for i := range a {
		p := float64(a[i]) * float64(b[i])
		sum += p
		abs += math.Abs(p)
	}
	return sum, abs
}

// tol is the error allowed for a float32 sum of n terms: a (generous)
// multiple of the worst-case bound for recursive summation, n*eps*sum|t|.
// Any summation order the kernels use is within it.
func tol(n int, abs float64) float64 {
	const eps = 1.0 / (1 << 23)
	return float64(n+4)*eps*abs + 1e-30
}

func near(got float32, want, abs float64, n int) bool {
	return math.Abs(float64(got)-want) <= tol(n, abs)
}
