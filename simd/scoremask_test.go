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

// scoreBit16 is ScoreMask16's rule for one vector, written out
// independently of the reference kernel.
func scoreBit16(sum uint16, scale, offset float32, term uint16, tscale, bound float32) bool {
	d := float32(float32(sum)*scale) + offset
	d += float32(float32(term) * tscale)
	return d < bound
}

// TestScoreMask16 holds every level to the rule over every length up to
// 300 and a few longer ones (so partial last blocks of every size), with
// bounds drawn from the scores themselves (exact ties, and the floats just
// above and below them), +Inf, -Inf and NaN, term scales of zero, tiny
// and huge (an infinite product), NaN and infinite offsets, and masks that
// start with stale bits the kernel must clear.
func TestScoreMask16(t *testing.T) {
	forEachLevel(t, func(t testing.TB, level string) {
		r := rand.New(rand.NewPCG(53, 54))
		for _, n := range testLens() {
			for rep := 0; rep < 4; rep++ {
				sums := make([]uint16, n+rep)[rep:] // unaligned starts
				terms := make([]uint16, n+rep+1)[rep+1:]
				for i := range sums {
					sums[i], terms[i] = uint16(r.Uint32()), uint16(r.Uint32())
					if rep == 1 {
						sums[i] %= 64 // many equal sums and terms
						terms[i] %= 8
					}
				}
				if n > 3 {
					terms[r.IntN(n)] = 0
					terms[r.IntN(n)] = math.MaxUint16
					sums[r.IntN(n)] = math.MaxUint16
				}
				scale := float32(0.001 + r.Float64())
				offset := float32(r.NormFloat64() * 1e5)
				tscale := float32(r.Float64() * 3)
				switch rep {
				case 2:
					tscale = 0
				case 3:
					tscale = []float32{1e-30, 1e36, float32(math.Inf(1))}[r.IntN(3)]
				}
				if n == 7 {
					offset = float32(math.NaN())
				}
				if n == 9 {
					offset = float32(math.Inf(-1))
				}
				bounds := []float32{float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 0}
				if n > 0 {
					for range 3 {
						i := r.IntN(n)
						d := float32(float32(sums[i])*scale) + offset
						d += float32(float32(terms[i]) * tscale)
						bounds = append(bounds, d, math.Nextafter32(d, float32(math.Inf(1))), math.Nextafter32(d, float32(math.Inf(-1))))
					}
				}
				nb := (n + FastScanBlock - 1) / FastScanBlock
				for _, bound := range bounds {
					masks := make([]uint32, nb+1)
					ref := make([]uint32, nb+1)
					for i := range masks {
						masks[i], ref[i] = 0xdeadbeef, 0xdeadbeef
					}
					ScoreMask16(sums, scale, offset, terms, tscale, bound, masks)
					scoreMask16Generic(sums, scale, offset, terms, tscale, bound, ref)
					for i := range n {
						want := scoreBit16(sums[i], scale, offset, terms[i], tscale, bound)
						if got := masks[i/FastScanBlock]>>(i%FastScanBlock)&1 == 1; got != want {
							t.Fatalf("%s n=%d rep=%d bound=%g: vector %d bit %v, want %v", level, n, rep, bound, i, got, want)
						}
					}
					for b := range nb + 1 {
						if masks[b] != ref[b] {
							t.Fatalf("%s n=%d rep=%d bound=%g: mask %d %#x, reference %#x", level, n, rep, bound, b, masks[b], ref[b])
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

// TestScoreMask16ShortPanics: a terms or masks slice shorter than the
// REQUIRES panics at every level rather than reading or writing past it.
func TestScoreMask16ShortPanics(t *testing.T) {
	forEachLevel(t, func(t testing.TB, level string) {
		for name, f := range map[string]func(){
			"terms": func() { ScoreMask16(make([]uint16, 64), 1, 0, make([]uint16, 63), 1, 1, make([]uint32, 2)) },
			"masks": func() { ScoreMask16(make([]uint16, 65), 1, 0, make([]uint16, 65), 1, 1, make([]uint32, 2)) },
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
