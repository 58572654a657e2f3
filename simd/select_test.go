package simd

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestCoarseDist holds every level to the reference bit for bit over
// every length up to 300 and a few long ones, unaligned, with dot
// products of both signs and norms spanning orders of magnitude.
func TestCoarseDist(t *testing.T) {
	forEachLevel(t, func(t testing.TB, level string) {
		r := rand.New(rand.NewPCG(81, 82))
		for _, n := range testLens() {
			norm, dot := tail(r, n, 1), tail(r, n, 3)
			qq, unscale := float32(r.Float64()*1e4), float32(r.Float64()*3)
			got, want := make([]float32, n), make([]float32, n)
			CoarseDist(got, norm, dot, qq, unscale)
			coarseDistGeneric(want, norm, dot, qq, unscale)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s n=%d i=%d: got %v, reference %v", level, n, i, got[i], want[i])
				}
			}
		}
	})
}

// TestMinBits holds every level to the reference over every length,
// with floats of both signs, zeros and infinities.
func TestMinBits(t *testing.T) {
	forEachLevel(t, func(t testing.TB, level string) {
		r := rand.New(rand.NewPCG(83, 84))
		for _, n := range testLens() {
			v := tail(r, n, 2)
			for i := range v {
				switch r.IntN(16) {
				case 0:
					v[i] = float32(math.Inf(1))
				case 1:
					v[i] = float32(math.Copysign(0, -1))
				case 2:
					v[i] = 0
				}
			}
			reps := make([]int32, n+3)
			for i := range reps {
				reps[i] = r.Int32() - math.MaxInt32/2
			}
			want := slices.Clone(reps)
			MinBits(reps, v)
			minBitsGeneric(want, v)
			if !slices.Equal(reps, want) {
				t.Fatalf("%s n=%d: got %v, reference %v", level, n, reps, want)
			}
		}
	})
}

// TestMaskLE holds every level to the reference over every length, with
// values equal to the bound, NaNs and infinities among them, and checks
// that the words' unused bits are cleared.
func TestMaskLE(t *testing.T) {
	forEachLevel(t, func(t testing.TB, level string) {
		r := rand.New(rand.NewPCG(85, 86))
		for _, n := range testLens() {
			v := tail(r, n, 1)
			b := float32(r.NormFloat64())
			for i := range v {
				switch r.IntN(10) {
				case 0:
					v[i] = b
				case 1:
					v[i] = float32(math.NaN())
				case 2:
					v[i] = float32(math.Inf(-1))
				}
			}
			words := (n + 31) / 32
			got := make([]uint32, words+1)
			for i := range got {
				got[i] = math.MaxUint32
			}
			want := slices.Clone(got)
			MaskLE(v, b, got)
			maskLEGeneric(v, b, want)
			if !slices.Equal(got, want) {
				t.Fatalf("%s n=%d: got %x, reference %x", level, n, got, want)
			}
			for i := range n {
				if bit := got[i/32]>>(i%32)&1 == 1; bit != (v[i] <= b) {
					t.Fatalf("%s n=%d i=%d: bit %v for %v <= %v", level, n, i, bit, v[i], b)
				}
			}
		}
	})
}

// TestQuantizeLUT4 holds every level to the reference byte for byte, and
// scale and offset bit for bit, for every m up to 70 and a few beyond 256
// rows, over tables of several spreads and with constant rows, and checks
// the bytes against their definition.
func TestQuantizeLUT4(t *testing.T) {
	forEachLevel(t, func(t testing.TB, level string) {
		r := rand.New(rand.NewPCG(87, 88))
		ms := []int{300}
		for m := 1; m <= 70; m++ {
			ms = append(ms, m)
		}
		for _, m := range ms {
			for kind := range 4 {
				lut := tail(r, 16*m, 1)
				switch kind {
				case 1: // one spread, like a real table
					for i := range lut {
						lut[i] = float32(r.NormFloat64() * 1000)
					}
				case 2: // constant rows
					for s := range m {
						for c := range 16 {
							lut[s*16+c] = float32(s)
						}
					}
				case 3: // some constant rows, some not
					for s := 0; s < m; s += 2 {
						for c := range 16 {
							lut[s*16+c] = -float32(s)
						}
					}
				}
				got, want := make([]byte, 16*m+16), make([]byte, 16*m+16)
				gs, goff := QuantizeLUT4(lut, m, got)
				ws, woff := quantizeLUT4Generic(lut, m, want)
				if math.Float32bits(gs) != math.Float32bits(ws) || math.Float32bits(goff) != math.Float32bits(woff) {
					t.Fatalf("%s m=%d kind %d: scale, offset %v, %v; reference %v, %v", level, m, kind, gs, goff, ws, woff)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%s m=%d kind %d: bytes differ from the reference", level, m, kind)
				}
				for s := range m {
					row := lut[s*16 : s*16+16]
					lo := slices.Min(row)
					for c, v := range row {
						if e := float64(v-lo)*float64(gs) - float64(got[s*16+c]); e < -0.51 || e > 0.51 {
							t.Fatalf("%s m=%d row %d: byte %d for (%v-%v)·%v", level, m, s, got[s*16+c], v, lo, gs)
						}
					}
				}
				if got[16*m] != 0 {
					t.Fatalf("%s m=%d: wrote past the table", level, m)
				}
			}
		}
	})
}

// BenchmarkQuantizeLUT4 times a 52-row table (IVF…,PQ52x4's), per level.
func BenchmarkQuantizeLUT4(b *testing.B) {
	r := rand.New(rand.NewPCG(89, 90))
	lut := make([]float32, 52*16)
	for i := range lut {
		lut[i] = float32(r.NormFloat64() * 1000)
	}
	q := make([]byte, 52*16)
	benchLevels(b, func(b *testing.B) {
		for b.Loop() {
			QuantizeLUT4(lut, 52, q)
		}
	})
}

// BenchmarkCoarseSelect times the coarse step's passes over 2,048 lists
// (CoarseDist, MinBits in runs of 96, MaskLE), per level.
func BenchmarkCoarseSelect(b *testing.B) {
	r := rand.New(rand.NewPCG(91, 92))
	norm, dot, dst := make([]float32, 2048), make([]float32, 2048), make([]float32, 2048)
	randFloats(r, norm)
	randFloats(r, dot)
	reps := make([]int32, 96)
	masks := make([]uint32, 64)
	benchLevels(b, func(b *testing.B) {
		for b.Loop() {
			CoarseDist(dst, norm, dot, 100, 2)
			for lo := 0; lo < len(dst); lo += 96 {
				MinBits(reps, dst[lo:min(lo+96, len(dst))])
			}
			MaskLE(dst, 0, masks)
		}
	})
}
