package ivfpq

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"
)

// TestSelectProbes checks selectProbes against a plain sort of (distance,
// list) with ties by lower list and NaN last, on distances drawn to have
// many ties, negative values (rounding of ‖q‖² + ‖c‖² − 2⟨q, c⟩), both
// zeros, infinities and NaNs.
func TestSelectProbes(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	pool := []float32{0, float32(math.Copysign(0, -1)), -3, 1.5, float32(math.Inf(1)), float32(math.NaN()), float32(-math.NaN())}
	for trial := range 2000 {
		nlist := 1 + rng.Intn(300)
		if trial%50 == 0 {
			nlist = 2048
		}
		s := &searchScratch{coarseDist: make([]float32, nlist)}
		for l := range s.coarseDist {
			switch rng.Intn(4) {
			case 0:
				s.coarseDist[l] = pool[rng.Intn(len(pool))]
			case 1:
				s.coarseDist[l] = float32(rng.Intn(8))
			default:
				s.coarseDist[l] = rng.Float32()*1000 - 10
			}
		}
		nprobe := 1 + rng.Intn(nlist)
		if trial%2 == 0 { // few enough for selectProbes' grouped pass
			nprobe = 1 + rng.Intn(max(1, nlist/8))
		}
		s.selectProbes(nlist, nprobe)

		want := make([]int, nlist)
		for l := range want {
			want[l] = l
		}
		d := s.coarseDist
		slices.SortStableFunc(want, func(a, b int) int {
			na, nb := d[a] != d[a], d[b] != d[b]
			switch {
			case na && !nb:
				return 1
			case nb && !na:
				return -1
			case !na && d[a] < d[b]:
				return -1
			case !na && d[a] > d[b]:
				return 1
			case d[a] == 0 && d[b] == 0 && math.Signbit(float64(d[a])) != math.Signbit(float64(d[b])):
				if math.Signbit(float64(d[a])) {
					return -1 // −0 before +0, as orderKey sorts them
				}
				return 1
			}
			return a - b
		})
		if !slices.Equal(s.probeOrder, want[:nprobe]) {
			t.Fatalf("nlist %d nprobe %d: got %v, want %v (dists %v)", nlist, nprobe, s.probeOrder, want[:nprobe], d)
		}
	}
}

// BenchmarkSelectProbes measures choosing 36 and 128 of 2048 lists, for
// 64 queries in turn (one query's distances again and again would let the
// branch predictor learn them), on distances in random order and on
// distances in runs: centroids along a random walk, so that a query's
// nearest lists have nearby numbers.
func BenchmarkSelectProbes(b *testing.B) {
	const nlist, dim, nq = 2048, 8, 64
	rng := rand.New(rand.NewSource(1))
	random := make([][]float32, nq)
	for q := range random {
		random[q] = make([]float32, nlist)
		for l := range random[q] {
			random[q][l] = rng.Float32() * 1e5
		}
	}
	walk := make([]float32, nlist*dim)
	for l := 1; l < nlist; l++ {
		for j := range dim {
			walk[l*dim+j] = walk[(l-1)*dim+j] + float32(rng.NormFloat64())
		}
	}
	runs := make([][]float32, nq)
	for q := range runs {
		c := walk[rng.Intn(nlist)*dim:][:dim]
		runs[q] = make([]float32, nlist)
		for l := range runs[q] {
			var d float32
			for j := range dim {
				x := walk[l*dim+j] - c[j] - float32(rng.NormFloat64())
				d += x * x
			}
			runs[q][l] = d
		}
	}
	for _, order := range []struct {
		name  string
		dists [][]float32
	}{{"random", random}, {"runs", runs}} {
		for _, nprobe := range []int{36, 128} {
			b.Run(fmt.Sprintf("%s/nprobe%d", order.name, nprobe), func(b *testing.B) {
				s := &searchScratch{coarseDist: make([]float32, nlist)}
				for i := 0; b.Loop(); i++ {
					copy(s.coarseDist, order.dists[i%nq])
					s.selectProbes(nlist, nprobe)
				}
			})
		}
	}
}
