package simd

import (
	"math"
	"math/rand/v2"
	"testing"
)

// scoreBit is ScoreMask's rule for one vector, written out independently of
// the reference kernel.
func scoreBit(sum uint16, scale, offset, term, bound float32) bool {
	d := float32(float32(sum)*scale) + offset
	d += term
	return d < bound
}

// TestScoreMask holds every level to the rule over every length up to 300
// and a few longer ones, with bounds drawn from the scores themselves (so
// ties and near-ties are common), +Inf, -Inf and NaN, NaN and infinite
// terms, and masks that start with stale bits the kernel must clear.
func TestScoreMask(t *testing.T) {
	forEachLevel(t, func(t testing.TB, level string) {
		r := rand.New(rand.NewPCG(51, 52))
		for _, n := range testLens() {
			for rep := 0; rep < 3; rep++ {
				sums := make([]uint16, n)
				for i := range sums {
					sums[i] = uint16(r.Uint32())
					if rep == 1 {
						sums[i] %= 64 // many equal sums
					}
				}
				terms := tail(r, n, rep)
				if n > 5 && rep == 2 {
					terms[r.IntN(n)] = float32(math.NaN())
					terms[r.IntN(n)] = float32(math.Inf(1))
					terms[r.IntN(n)] = float32(math.Inf(-1))
				}
				scale := float32(0.001 + r.Float64())
				offset := float32(r.NormFloat64() * 100)
				bounds := []float32{float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 0}
				if n > 0 {
					for range 3 {
						i := r.IntN(n)
						bounds = append(bounds, float32(float32(sums[i])*scale)+offset+terms[i])
					}
				}
				nb := (n + FastScanBlock - 1) / FastScanBlock
				for _, bound := range bounds {
					masks := make([]uint32, nb+1)
					for i := range masks {
						masks[i] = 0xdeadbeef
					}
					ScoreMask(sums, scale, offset, terms, bound, masks)
					for i := range n {
						want := scoreBit(sums[i], scale, offset, terms[i], bound)
						if got := masks[i/FastScanBlock]>>(i%FastScanBlock)&1 == 1; got != want {
							t.Fatalf("%s n=%d rep=%d bound=%g: vector %d bit %v, want %v", level, n, rep, bound, i, got, want)
						}
					}
					if n%FastScanBlock != 0 && masks[nb-1]>>(n%FastScanBlock) != 0 {
						t.Fatalf("%s n=%d: bits past the last score set: %#x", level, n, masks[nb-1])
					}
					if masks[nb] != 0xdeadbeef {
						t.Fatalf("%s n=%d: wrote past ceil(n/32) masks", level, n)
					}
				}
			}
		}
	})
}

// TestScoreMaskShortPanics: a terms or masks slice shorter than the
// REQUIRES panics at every level rather than reading or writing past it.
func TestScoreMaskShortPanics(t *testing.T) {
	forEachLevel(t, func(t testing.TB, level string) {
		for name, f := range map[string]func(){
			"terms": func() { ScoreMask(make([]uint16, 64), 1, 0, make([]float32, 63), 1, make([]uint32, 2)) },
			"masks": func() { ScoreMask(make([]uint16, 65), 1, 0, make([]float32, 65), 1, make([]uint32, 2)) },
		} {
			func() {
				defer func() {
					if recover() == nil {
						t.Fatalf("%s: short %s did not panic", level, name)
					}
				}()
				f()
			}()
		}
	})
}
