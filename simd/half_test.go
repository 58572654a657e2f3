package simd

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestFromFloat16Exhaustive checks every half against its definition,
// (−1)^s · 2^(e−15) · (1 + m/1024), or 2⁻¹⁴ · m/1024 for subnormals, with
// infinities and NaNs kept, and that ToFloat16 gives every finite half
// and infinity back.
func TestFromFloat16Exhaustive(t *testing.T) {
	for h := range 1 << 16 {
		h := uint16(h)
		s, e, m := h>>15, int(h>>10&0x1f), float64(h&0x3ff)
		var want float64
		switch e {
		case 0:
			want = math.Ldexp(m/1024, -14)
		case 31:
			want = math.Inf(1)
			if m != 0 {
				want = math.NaN()
			}
		default:
			want = math.Ldexp(1+m/1024, e-15)
		}
		if s == 1 {
			want = -want
		}
		got := FromFloat16(h)
		if math.IsNaN(want) {
			if !math.IsNaN(float64(got)) {
				t.Fatalf("%#04x: %g, want NaN", h, got)
			}
			if ToFloat16(got)&0x7c00 != 0x7c00 || ToFloat16(got)&0x3ff == 0 {
				t.Fatalf("%#04x: NaN back as %#04x", h, ToFloat16(got))
			}
			continue
		}
		if float64(got) != want || math.Signbit(float64(got)) != (s == 1) {
			t.Fatalf("%#04x: %g, want %g", h, got, want)
		}
		if back := ToFloat16(got); back != h {
			t.Fatalf("%#04x: %g back as %#04x", h, got, back)
		}
	}
}

// TestToFloat16Rounds checks ToFloat16 on random floats of every scale and
// on each midpoint between neighbouring halves: the result is the nearest
// half (the infinity past the largest, 65504, from 65520 on), ties to the
// even one.
func TestToFloat16Rounds(t *testing.T) {
	check := func(f float32) {
		t.Helper()
		h := ToFloat16(f)
		got := float64(FromFloat16(h))
		x := float64(f)
		if math.Abs(x) >= 65520 {
			if !math.IsInf(got, int(math.Copysign(1, x))) {
				t.Fatalf("%g: %g, want an infinity", f, got)
			}
			return
		}
		if math.Signbit(got) != math.Signbit(x) {
			t.Fatalf("%g: %g, sign lost", f, got)
		}
		// The neighbours of h in magnitude; h must be at least as near
		// as both, and even on a tie.
		for _, nb := range []uint16{h&0x7fff + 1, h&0x7fff - 1} {
			if h&0x7fff == 0 && nb == 0xffff || nb >= 0x7c00 {
				continue
			}
			other := float64(FromFloat16(nb | h&0x8000))
			dg, do := math.Abs(got-x), math.Abs(other-x)
			if do < dg || do == dg && h&1 == 1 {
				t.Fatalf("%g: %#04x (%g), but %#04x (%g) is nearer or even", f, h, got, nb|h&0x8000, other)
			}
		}
	}
	r := rand.New(rand.NewPCG(61, 62))
	for range 200000 {
		f := float32(math.Ldexp(r.Float64()*2-1, r.IntN(50)-30))
		check(f)
	}
	for h := range 0x7bff {
		lo, hi := float64(FromFloat16(uint16(h))), float64(FromFloat16(uint16(h+1)))
		mid := float32((lo + hi) / 2) // exact: halves have 11 significant bits
		check(mid)
		check(-mid)
		check(math.Nextafter32(mid, 0))
		check(math.Nextafter32(mid, 1e9))
	}
	for _, f := range []float32{0, float32(math.Copysign(0, -1)), 65504, 65519.99, 65520, 1e30, -1e30, 0x1p-25, 0x1p-26, 0x1.8p-25} {
		check(f)
	}
	if h := ToFloat16(float32(math.Inf(-1))); h != 0xfc00 {
		t.Fatalf("-Inf: %#04x", h)
	}
	if h := ToFloat16(float32(math.NaN())); h&0x7c00 != 0x7c00 || h&0x3ff == 0 {
		t.Fatalf("NaN: %#04x", h)
	}
}

// TestDotBlockedF16 holds every level to the Go reference and to the exact
// dot products over the rounded rows, over the shapes TestDotBlocked
// uses, and checks that the kernel widens every half exactly (a one-
// coordinate dot product with 1 is the value itself).
func TestDotBlockedF16(t *testing.T) {
	forEachLevel(t, func(t testing.TB, level string) {
		r := rand.New(rand.NewPCG(63, 64))
		for _, dim := range []int{0, 1, 2, 3, 7, 8, 31, 128, 129} {
			for _, n := range []int{0, 8, 56, 64, 72, 136, 2048} {
				rows := make([]float32, n*dim)
				randFloats(r, rows)
				q := tail(r, dim, 1)
				blk := BlockedF16(rows, max(dim, 1))
				if dim == 0 {
					blk = nil
				}
				rounded := make([]float32, len(rows))
				for i, v := range rows {
					rounded[i] = FromFloat16(ToFloat16(v))
				}
				out := make([]float32, n)
				for i := range out {
					out[i] = 12345
				}
				DotBlockedF16(q, blk, out)
				ref := make([]float32, n)
				dotBlockedF16Generic(q, blk, ref)
				for i := range n {
					want, abs := exactDot(q, rounded[i*dim:(i+1)*dim])
					if !near(out[i], want, abs, dim) || !near(out[i], float64(ref[i]), abs, 2*dim) {
						t.Fatalf("%s dim=%d n=%d row %d: got %g, exact %g, reference %g", level, dim, n, i, out[i], want, ref[i])
					}
				}
			}
		}
		// Every half, widened by the kernel.
		all := make([]uint16, 1<<16)
		for i := range all {
			all[i] = uint16(i)
		}
		out := make([]float32, 1<<16)
		DotBlockedF16([]float32{1}, all, out)
		for i, v := range out {
			want := FromFloat16(uint16(i))
			if v != want && !(v != v && want != want) {
				t.Fatalf("%s: half %#04x widened to %g, want %g", level, i, v, want)
			}
		}
	})
}

// TestDotBlockedF16Panics: as TestDotBlockedPanics.
func TestDotBlockedF16Panics(t *testing.T) {
	forEachLevel(t, func(t testing.TB, level string) {
		for name, c := range map[string]struct {
			q   []float32
			blk []uint16
			out []float32
		}{
			"partial block": {make([]float32, 4), make([]uint16, 4*16), make([]float32, 12)},
			"short blocks":  {make([]float32, 4), make([]uint16, 4*16-1), make([]float32, 16)},
		} {
			func() {
				defer func() {
					if recover() == nil {
						t.Fatalf("%s %s: no panic", level, name)
					}
				}()
				DotBlockedF16(c.q, c.blk, c.out)
			}()
		}
	})
}
