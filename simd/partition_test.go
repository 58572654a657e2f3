package simd

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPartitionBelow holds every level to the reference element for
// element (both parts in input order with scratch for every score,
// Lomuto's order with less) over every length up to 300 and a few long ones, with scores of both signs, signed zeros, infinities and
// NaNs, limits drawn from the keys (so ties with the limit occur) and at
// both ends of the int32 range and beyond, and checks the split against
// the definition.
func TestPartitionBelow(t *testing.T) {
	forEachLevel(t, func(t testing.TB, level string) {
		r := rand.New(rand.NewPCG(91, 92))
		for _, n := range testLens() {
			score := tail(r, n, 2)
			for i := range score {
				switch r.IntN(24) {
				case 0:
					score[i] = float32(math.NaN())
				case 1:
					score[i] = float32(math.Inf(1 - 2*r.IntN(2)))
				case 2:
					score[i] = float32(math.Copysign(0, float64(1-2*r.IntN(2))))
				case 3:
					score[i] = -float32(math.NaN())
				}
			}
			row := make([]uint32, n)
			for i := range row {
				row[i] = r.Uint32()
			}
			lims := []int64{math.MinInt32, math.MinInt32 + 1, math.MaxInt32, math.MaxInt32 + 1, 0, 1, -1}
			for range 4 {
				if n > 0 {
					lims = append(lims, int64(OrderKey(score[r.IntN(n)]))+int64(r.IntN(2)))
				}
			}
			for _, lim := range lims {
				gs, gr := slices.Clone(score), slices.Clone(row)
				ws, wr := slices.Clone(score), slices.Clone(row)
				stable := r.IntN(4) != 0
				var tmpS []float32
				var tmpR []uint32
				if stable {
					tmpS, tmpR = make([]float32, n+r.IntN(3)), make([]uint32, n+r.IntN(3))
				} else if n > 0 {
					tmpS, tmpR = make([]float32, n-1), make([]uint32, n)
				}
				got := PartitionBelow(gs, gr, lim, tmpS, tmpR)
				var want int
				if stable {
					want = partitionBelowGeneric(ws, wr, lim, make([]float32, n), make([]uint32, n))
				} else {
					want = partitionLomuto(ws, wr, lim)
				}
				if got != want || !sameBits(gs, ws) || !slices.Equal(gr, wr) {
					t.Fatalf("%s n=%d lim=%d: got %d below, %v %v; reference %d, %v %v", level, n, lim, got, gs, gr, want, ws, wr)
				}
				for i := range n {
					if below := int64(OrderKey(gs[i])) < lim; below != (i < got) {
						t.Fatalf("%s n=%d lim=%d: score %v at %d, %d below", level, n, lim, gs[i], i, got)
					}
				}
			}
		}
	})
}

// TestOrderKeySortsAsFloats checks OrderKey against float order on
// neighbouring and special values.
func TestOrderKeySortsAsFloats(t *testing.T) {
	v := []float32{float32(math.Inf(-1)), -math.MaxFloat32, -1, -math.SmallestNonzeroFloat32,
		float32(math.Copysign(0, -1)), 0, math.SmallestNonzeroFloat32, 1, math.MaxFloat32, float32(math.Inf(1))}
	for i := 1; i < len(v); i++ {
		if OrderKey(v[i-1]) >= OrderKey(v[i]) {
			t.Fatalf("OrderKey(%v) = %d not below OrderKey(%v) = %d", v[i-1], OrderKey(v[i-1]), v[i], OrderKey(v[i]))
		}
	}
	if OrderKey(float32(math.NaN())) <= OrderKey(float32(math.Inf(1))) {
		t.Fatal("a positive NaN does not sort beyond +Inf")
	}
}

// sameBits reports whether two float slices hold the same bits.
func sameBits(a, b []float32) bool {
	return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
}

// BenchmarkPartitionBelow: a cut of a candidate set at k 10, Refine 8
// (160 scores, about half below the pivot), stably through scratch and in
// place (the copy of the scores back each time is in both).
func BenchmarkPartitionBelow(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	src := make([]float32, 160)
	for i := range src {
		src[i] = r.Float32() * 1000
	}
	row := make([]uint32, len(src))
	s := make([]float32, len(src))
	lim := int64(OrderKey(500))
	tmpS, tmpR := make([]float32, len(src)), make([]uint32, len(src))
	b.Run("scratch", func(b *testing.B) {
		for b.Loop() {
			copy(s, src)
			PartitionBelow(s, row, lim, tmpS, tmpR)
		}
	})
	b.Run("inplace", func(b *testing.B) {
		for b.Loop() {
			copy(s, src)
			PartitionBelow(s, row, lim, nil, nil)
		}
	})
}
