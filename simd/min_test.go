package simd

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestMin holds every level to the reference over every length up to 300
// (every main-loop and tail combination), with the minimum placed at
// every position of short inputs and at random ones otherwise.
func TestMin(t *testing.T) {
	forEachLevel(t, func(t testing.TB, level string) {
		r := rand.New(rand.NewPCG(41, 42))
		for _, n := range testLens()[1:] {
			for rep := 0; rep < 4; rep++ {
				v := tail(r, n, rep%3)
				pos := r.IntN(n)
				if n <= 40 {
					pos = rep * n / 4
				}
				v[pos] = -float32(math.MaxFloat32)
				if got, want := Min(v), minGeneric(v); got != want || got != v[pos] {
					t.Fatalf("%s n=%d min at %d: got %g, reference %g", level, n, pos, got, want)
				}
			}
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Fatalf("%s: Min of an empty slice did not panic", level)
				}
			}()
			Min(nil)
		}()
	})
}
