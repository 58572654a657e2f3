package ivfpq

import (
	"cmp"
	"github.com/memrl/memrl/simd"
	"math"
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

// TestRerankCandsWindow holds rerankCands to an exact re-rank whatever the
// number of candidates against its prefetch window (rerankAhead) and
// whether the window runs on into a next query's candidates: every
// candidate scored exactly once as −‖q−x‖², the best k first, the same
// results with and without next, next's candidates untouched, and of
// next's rows only its first rerankAhead asked for.
func TestRerankCandsWindow(t *testing.T) {
	const n, d, k = 2000, 16, 5
	base := clustered(n, d, 20, 31)
	ix := buildIndex(t, Params{Dim: d, NList: 8, M: 8, Bits: 4, Metric: L2}, base, n)
	src := &countingSource{sliceSource: sliceSource{base, d}}
	s := ix.getScratch()
	defer ix.scratch.Put(s)
	r := rand.New(rand.NewPCG(73, 74))
	fill := func(c *candSet, m int) {
		c.reset(max(m, 1), nil)
		for range m {
			c.push(r.Float32(), uint32(r.IntN(n)))
		}
		c.settle()
	}
	for _, m := range []int{0, 1, 2, rerankAhead - 1, rerankAhead, rerankAhead + 1, 2*rerankAhead + 1, 80} {
		for _, nm := range []int{-1, 0, 1, rerankAhead - 1, rerankAhead, 80} {
			var c, next candSet
			fill(&c, m)
			var np *candSet
			if nm >= 0 {
				fill(&next, nm)
				np = &next
			}
			nextRows := slices.Clone(next.row)
			nextScores := slices.Clone(next.score)
			q := base[r.IntN(n)*d:][:d]
			want := make([]Neighbor, 0, m)
			for _, row := range c.row {
				want = append(want, Neighbor{Row: row, Sim: -l2Ref(q, base[int(row)*d:][:d])})
			}
			slices.SortFunc(want, func(a, b Neighbor) int {
				if better(a, b) {
					return -1
				}
				if better(b, a) {
					return 1
				}
				return 0
			})
			src.reads = 0
			got := slices.Clone(ix.rerankCands(q, k, src, &c, s, np, nil))
			reads := src.reads
			src.reads = 0
			alone := slices.Clone(ix.rerankCands(q, k, src, &c, s, nil, nil))
			if len(got) != m || len(alone) != m {
				t.Fatalf("m=%d next=%d: %d and %d results", m, nm, len(got), len(alone))
			}
			p := min(k, m)
			for i := range p {
				if got[i].Row != want[i].Row || math.Abs(float64(got[i].Sim-want[i].Sim)) > 1e-3*math.Abs(float64(want[i].Sim))+1e-4 {
					t.Fatalf("m=%d next=%d: result %d is %v, want %v", m, nm, i, got[i], want[i])
				}
			}
			if !slices.Equal(got[:p], alone[:p]) {
				t.Fatalf("m=%d next=%d: %v with next, %v without", m, nm, got[:p], alone[:p])
			}
			ahead := 0
			if nm > 0 {
				ahead = min(nm, rerankAhead) - min(nm, max(0, rerankAhead-m))
			}
			if reads != m+ahead || src.reads != m {
				t.Fatalf("m=%d next=%d: %d rows read with next (want %d), %d without (want %d)", m, nm, reads, m+ahead, src.reads, m)
			}
			if !slices.Equal(next.row, nextRows) || !slices.Equal(next.score, nextScores) {
				t.Fatalf("m=%d next=%d: next's candidates changed", m, nm)
			}
		}
	}
}

// TestRerankCandsMemo: rows whose exact distances a memo holds (a pruning
// refresh's, kthExactLocked) are not read again, and the results are the
// same, bit for bit, as without the memo; an IP index ignores it.
func TestRerankCandsMemo(t *testing.T) {
	const n, d, k = 2000, 16, 5
	base := clustered(n, d, 20, 33)
	for _, metric := range []Metric{L2, IP} {
		ix := buildIndex(t, Params{Dim: d, NList: 8, M: 8, Bits: 4, Metric: metric}, base, n)
		src := &countingSource{sliceSource: sliceSource{base, d}}
		s := ix.getScratch()
		r := rand.New(rand.NewPCG(75, 76))
		for _, m := range []int{1, 5, 40, 80} {
			var c candSet
			c.reset(m, nil)
			for range m {
				c.push(r.Float32(), uint32(r.IntN(n)))
			}
			c.settle()
			q := base[r.IntN(n)*d:][:d]
			var memo exactMemo
			memo.reset(make([]uint32, k), make([]float32, k))
			hits := 0
			for i := 0; i < len(c.row) && len(memo.row) < k; i += 2 {
				if _, dup := memo.lookup(c.row[i]); dup {
					continue
				}
				memo.row = append(memo.row, c.row[i])
				memo.dist = append(memo.dist, simd.L2Sq(q, base[int(c.row[i])*d:][:d]))
				hits++
			}
			src.reads = 0
			plain := slices.Clone(ix.rerankCands(q, k, src, &c, s, nil, nil))
			if src.reads != len(c.row) {
				t.Fatalf("%v m=%d: %d rows read without a memo, want %d", metric, m, src.reads, len(c.row))
			}
			src.reads = 0
			got := slices.Clone(ix.rerankCands(q, k, src, &c, s, nil, &memo))
			want := 0
			for _, row := range c.row {
				if _, in := memo.lookup(row); !in {
					want++
				}
			}
			if metric == IP {
				want = len(c.row)
			}
			if src.reads != want {
				t.Fatalf("%v m=%d: %d rows read with %d in the memo, want %d", metric, m, src.reads, hits, want)
			}
			if !slices.Equal(got, plain) {
				t.Fatalf("%v m=%d: %v with the memo, %v without", metric, m, got, plain)
			}
		}
		ix.scratch.Put(s)
	}
}

// l2Ref is ‖a−b‖² in float64, a plain reference for the kernels.
func l2Ref(a, b []float32) float32 {
	var s float64
	for i := range a {
		d := float64(a[i]) - float64(b[i])
		s += d * d
	}
	return float32(s)
}
