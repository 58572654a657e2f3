package ivfpq

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPrimeBoundIsTheKthSmallest holds primeBound's bound to a sort (by
// orderKey) for every length up to 300 and every limit, over distinct,
// tied, sorted and reversed scores and scores with infinities and NaNs
// among them: the next float above the limit-th smallest, or none when
// that is not finite.
func TestPrimeBoundIsTheKthSmallest(t *testing.T) {
	r := rand.New(rand.NewPCG(71, 72))
	for n := 1; n <= 300; n += 1 + n/20 {
		for kind := range 5 {
			a := make([]float32, n)
			for i := range a {
				switch kind {
				case 0:
					a[i] = r.Float32()*2 - 1
				case 1:
					a[i] = float32(r.IntN(5))
				case 2:
					a[i] = float32(i)
				case 3:
					a[i] = float32(n - i)
				case 4:
					a[i] = []float32{float32(math.Inf(1)), float32(math.NaN()), float32(math.Inf(-1)), r.Float32()}[r.IntN(4)]
				}
			}
			keys := make([]int32, n)
			for i, x := range a {
				keys[i] = orderKey(x)
			}
			slices.Sort(keys)
			rows := make([]uint32, n)
			for k := 1; k <= n; k++ {
				var c candSet
				c.reset(k, nil)
				c.primeBound(slices.Clone(a), rows)
				kth := float64(math.Float32frombits(uint32(keys[k-1] ^ int32(uint32(keys[k-1]>>31)>>1))))
				want := float32(math.Inf(1))
				if !math.IsNaN(kth) && !math.IsInf(kth, 0) {
					want = math.Nextafter32(float32(kth), float32(math.Inf(1)))
				}
				if math.Float32bits(c.worst()) != math.Float32bits(want) {
					t.Fatalf("n %d kind %d limit %d: bound %v, want %v (the k-th smallest %v)", n, kind, k, c.worst(), want, kth)
				}
			}
		}
	}
}

// TestPrimedCandSetKeepsTheSmallest: a set primed from its first chunk of
// scores, then offered that chunk and more (as scan4 offers them: those
// below the bound), keeps exactly the limit smallest, rows included, as
// an unprimed set does.
func TestPrimedCandSetKeepsTheSmallest(t *testing.T) {
	r := rand.New(rand.NewPCG(73, 74))
	for _, limit := range []int{1, 5, 80, 160, 256} {
		for _, n := range []int{limit, limit + 1, 2 * limit, 300, 1000} {
			for ties := range 2 {
				all := make([]float32, n)
				for i := range all {
					all[i] = r.Float32()
					if ties == 1 {
						all[i] = float32(r.IntN(8))
					}
				}
				var plain, primed candSet
				plain.reset(limit, nil)
				primed.reset(limit, new(selectScratch))
				first := min(n, scanChunk)
				if !primed.primeable(first, nil) {
					t.Fatalf("limit %d n %d: not primeable", limit, n)
				}
				primed.primeBound(slices.Clone(all[:first]), make([]uint32, first))
				if primed.worst() >= float32(math.Inf(1)) {
					t.Fatalf("limit %d n %d: no bound after priming", limit, n)
				}
				for i, s := range all {
					for _, c := range []*candSet{&plain, &primed} {
						if s < c.worst() {
							c.push(s, uint32(i))
						}
					}
				}
				plain.settle()
				primed.settle()
				type cand struct {
					s float32
					r uint32
				}
				sorted := func(c *candSet) []cand {
					var out []cand
					for i := range c.score {
						out = append(out, cand{c.score[i], c.row[i]})
					}
					slices.SortFunc(out, func(a, b cand) int {
						if a.s != b.s {
							if a.s < b.s {
								return -1
							}
							return 1
						}
						return int(a.r) - int(b.r)
					})
					return out
				}
				if got, want := sorted(&primed), sorted(&plain); !slices.Equal(got, want) {
					t.Fatalf("limit %d n %d ties %d: primed set kept %v, unprimed %v", limit, n, ties, got, want)
				}
			}
		}
	}
}

// TestPrimeableRules: a set is primed only when it has no bound, the
// chunk can fill it and no filter can turn a vector away.
func TestPrimeableRules(t *testing.T) {
	var c candSet
	c.reset(80, nil)
	if c.primeable(79, nil) {
		t.Fatal("primeable from a chunk smaller than the limit")
	}
	if c.primeable(256, &Filter{}) {
		t.Fatal("primeable with a filter")
	}
	if !c.primeable(80, nil) {
		t.Fatal("not primeable from a chunk of limit vectors")
	}
	nans := make([]float32, 80)
	for i := range nans {
		nans[i] = float32(math.NaN())
	}
	c.primeBound(nans, make([]uint32, len(nans)))
	if c.worst() < float32(math.Inf(1)) {
		t.Fatal("primed with a NaN bound")
	}
	c.reset(1, nil)
	c.primeBound([]float32{3}, make([]uint32, 1))
	if c.primeable(256, nil) {
		t.Fatal("primeable twice")
	}
	if !(c.worst() > 3) || c.worst() != math.Nextafter32(3, float32(math.Inf(1))) {
		t.Fatalf("bound %v after priming with 3: want the next float above 3", c.worst())
	}
}
