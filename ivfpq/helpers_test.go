package ivfpq

import (
	"math"
	"math/rand"
	"slices"
	"testing"
)

// sliceSource is a VectorSource over a flat slice.
type sliceSource struct {
	x   []float32
	dim int
}

func (s sliceSource) Vector(row uint32) []float32 {
	return s.x[int(row)*s.dim : (int(row)+1)*s.dim]
}

// clustered returns n points of dimension d around nc random centres
// (spread 1 per coordinate, centres spread 10), flat.
func clustered(n, d, nc int, seed int64) []float32 {
	rng := rand.New(rand.NewSource(seed))
	centres := make([]float32, nc*d)
	for i := range centres {
		centres[i] = float32(rng.NormFloat64() * 10)
	}
	x := make([]float32, n*d)
	for i := 0; i < n; i++ {
		c := rng.Intn(nc)
		for j := 0; j < d; j++ {
			x[i*d+j] = centres[c*d+j] + float32(rng.NormFloat64())
		}
	}
	return x
}

func normalize(x []float32, d int) {
	for i := 0; i < len(x)/d; i++ {
		v := x[i*d : (i+1)*d]
		var s float64
		for _, a := range v {
			s += float64(a) * float64(a)
		}
		inv := float32(1 / math.Sqrt(s))
		for j := range v {
			v[j] *= inv
		}
	}
}

// bruteForce returns the exact top k rows for q, best first.
func bruteForce(x []float32, d int, q []float32, k int, metric Metric, skip func(uint32) bool) []uint32 {
	type cand struct {
		row uint32
		sim float64
	}
	var cs []cand
	for i := 0; i < len(x)/d; i++ {
		if skip != nil && skip(uint32(i)) {
			continue
		}
		var s float64
		for j := 0; j < d; j++ {
			a, b := float64(q[j]), float64(x[i*d+j])
			if metric == IP {
				s += a * b
			} else {
				s -= (a - b) * (a - b)
			}
		}
		cs = append(cs, cand{uint32(i), s})
	}
	slices.SortFunc(cs, func(a, b cand) int {
		if a.sim > b.sim {
			return -1
		}
		if a.sim < b.sim {
			return 1
		}
		return int(a.row) - int(b.row)
	})
	out := make([]uint32, 0, k)
	for i := 0; i < k && i < len(cs); i++ {
		out = append(out, cs[i].row)
	}
	return out
}

// recallAt returns the mean share of the true top k found in the returned k.
func recallAt(t *testing.T, ix *Index, base, queries []float32, d, k int, sp SearchParams) float64 {
	t.Helper()
	src := sliceSource{base, d}
	var hit, total int
	for qi := 0; qi < len(queries)/d; qi++ {
		q := queries[qi*d : (qi+1)*d]
		truth := bruteForce(base, d, q, k, ix.p.Metric, nil)
		got, err := ix.Search(q, k, sp, nil, src)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range got {
			if slices.Contains(truth, g.Row) {
				hit++
			}
		}
		total += len(truth)
	}
	return float64(hit) / float64(total)
}

// buildIndex trains on the first ntrain points of base and adds all of it.
func buildIndex(t testing.TB, p Params, base []float32, ntrain int) *Index {
	t.Helper()
	ix, err := Train(p, base[:ntrain*p.Dim], 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.AddBatch(0, base, 2); err != nil {
		t.Fatal(err)
	}
	return ix
}
