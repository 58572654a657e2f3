package ivfpq

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSelectSmallest holds selectSmallest to a sort: for every length up
// to 200 and every k, over distinct, heavily tied and sorted inputs, the
// first k scores are the k smallest and every (score, row) pair survives.
func TestSelectSmallest(t *testing.T) {
	r := rand.New(rand.NewPCG(61, 62))
	for n := 1; n <= 200; n++ {
		for kind := range 4 {
			score := make([]float32, n)
			for i := range score {
				switch kind {
				case 0:
					score[i] = r.Float32()
				case 1:
					score[i] = float32(r.IntN(4)) // many ties
				case 2:
					score[i] = float32(i) // sorted
				case 3:
					score[i] = float32(n - i) // reversed
				}
			}
			row := make([]uint32, n)
			for i := range row {
				row[i] = uint32(i)
			}
			want := slices.Sorted(slices.Values(score))
			for _, k := range []int{1, 2, n / 3, n / 2, n - 1, n} {
				if k < 1 || k > n {
					continue
				}
				s, rw := slices.Clone(score), slices.Clone(row)
				var tmp *selectScratch
				if (n+k)%2 == 0 {
					tmp = new(selectScratch) // through scratch (up to its length), else in place
				}
				selectSmallest(s, rw, k, tmp)
				got := slices.Sorted(slices.Values(s[:k]))
				if !slices.Equal(got, want[:k]) {
					t.Fatalf("n=%d kind=%d k=%d: kept %v, want %v", n, kind, k, got, want[:k])
				}
				// Ties at the k-th score: the lower rows are kept.
				for i := k; i < n; i++ {
					for j := range k {
						if s[j] == s[i] && rw[j] > rw[i] {
							t.Fatalf("n=%d kind=%d k=%d: kept row %d over row %d at equal score", n, kind, k, rw[j], rw[i])
						}
					}
				}
				for i := range s {
					if score[rw[i]] != s[i] {
						t.Fatalf("n=%d kind=%d k=%d: row %d moved without its score", n, kind, k, rw[i])
					}
				}
				slices.Sort(rw)
				if !slices.Equal(rw, row) {
					t.Fatalf("n=%d kind=%d k=%d: rows lost or duplicated", n, kind, k)
				}
			}
		}
	}
}

// TestCandSetKeepsTheSmallest feeds candSet and topK the same streams,
// each pushing only what its worst() admits, as the scans do: after settle
// both hold the same multiset of scores (the limit smallest of the
// stream), and the bound never turned away a score that belonged there.
func TestCandSetKeepsTheSmallest(t *testing.T) {
	r := rand.New(rand.NewPCG(63, 64))
	for _, limit := range []int{1, 2, 5, 10, 160} {
		for _, n := range []int{0, 1, limit - 1, limit, limit + 1, 2 * limit, 2*limit + 1, 10 * limit, 5000} {
			for ties := range 2 {
				var c candSet
				var h topK
				c.reset(limit, nil)
				h.reset(limit)
				all := make([]float32, n)
				for i := range all {
					all[i] = r.Float32()
					if ties == 1 {
						all[i] = float32(r.IntN(8))
					}
					if all[i] < c.worst() {
						c.push(all[i], uint32(i))
					}
					if all[i] < h.worst() {
						h.push(all[i], uint32(i))
					}
				}
				c.settle()
				got := slices.Sorted(slices.Values(c.score))
				want := slices.Sorted(slices.Values(all))[:min(limit, n)]
				if !slices.Equal(got, want) {
					t.Fatalf("limit %d n %d ties %d: kept %v, want %v", limit, n, ties, got, want)
				}
				if !slices.Equal(got, slices.Sorted(slices.Values(h.score))) {
					t.Fatalf("limit %d n %d: candSet and topK differ", limit, n)
				}
				for i, s := range c.score {
					if all[c.row[i]] != s {
						t.Fatalf("limit %d n %d: row %d carries score %g, pushed %g", limit, n, c.row[i], s, all[c.row[i]])
					}
				}
				if c.full() != (n >= limit) {
					t.Fatalf("limit %d n %d: full() = %v", limit, n, c.full())
				}
			}
		}
	}
}

// TestOrderKeyOrder: orderKey sorts as floats do (−0 below +0), over
// signed zeros, infinities, subnormals and ordinary values.
func TestOrderKeyOrder(t *testing.T) {
	negZero := float32(math.Copysign(0, -1))
	vals := []float32{float32(math.Inf(-1)), -math.MaxFloat32, -1, -math.SmallestNonzeroFloat32, negZero, 0, math.SmallestNonzeroFloat32, 0.5, 1, math.MaxFloat32, float32(math.Inf(1))}
	for i, a := range vals {
		for j, b := range vals {
			if got, want := orderKey(a) < orderKey(b), i < j; got != want {
				t.Fatalf("orderKey(%g) < orderKey(%g): %v, want %v", a, b, got, want)
			}
		}
	}
}
