package ivfpq

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestBestFirst holds bestFirst to a full sort: r[:k] is the sorted
// prefix, nothing is lost or duplicated, and no result after the first k
// is better than the k-th; with ties in Sim (broken by row) and every k
// from 0 to past the length.
func TestBestFirst(t *testing.T) {
	r := rand.New(rand.NewPCG(71, 72))
	byRank := func(a, b Neighbor) int {
		if better(a, b) {
			return -1
		}
		if better(b, a) {
			return 1
		}
		return 0
	}
	for _, n := range []int{0, 1, 2, 10, 11, 50, 160, 320} {
		for ties := range 2 {
			in := make([]Neighbor, n)
			for i := range in {
				in[i] = Neighbor{Row: uint32(r.IntN(1 << 20)), Sim: -r.Float32()}
				if ties == 1 {
					in[i].Sim = -float32(r.IntN(5))
				}
			}
			want := slices.Clone(in)
			slices.SortFunc(want, byRank)
			for _, k := range []int{0, 1, 2, 5, 10, n - 1, n, n + 3} {
				got := slices.Clone(in)
				bestFirst(got, k)
				p := min(max(k, 0), n)
				if k <= 0 {
					p = n
				}
				if !slices.Equal(got[:p], want[:p]) {
					t.Fatalf("n=%d ties=%d k=%d: prefix %v, want %v", n, ties, k, got[:p], want[:p])
				}
				for _, x := range got[p:] {
					if better(x, got[p-1]) {
						t.Fatalf("n=%d k=%d: %v after the first k beats the k-th %v", n, k, x, got[p-1])
					}
				}
				all := slices.Clone(got)
				slices.SortFunc(all, func(a, b Neighbor) int {
					return cmp.Or(cmp.Compare(a.Row, b.Row), cmp.Compare(a.Sim, b.Sim))
				})
				ref := slices.Clone(in)
				slices.SortFunc(ref, func(a, b Neighbor) int {
					return cmp.Or(cmp.Compare(a.Row, b.Row), cmp.Compare(a.Sim, b.Sim))
				})
				if !slices.Equal(all, ref) {
					t.Fatalf("n=%d k=%d: results lost or duplicated", n, k)
				}
			}
		}
	}
}
