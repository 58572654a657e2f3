package ivfpq

import (
	"math"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
)

// TestPruneLosesNoTrueNeighbour searches with and without list pruning (at
// PruneFactor 1) and checks the property prune.go proves: every row of the exact top k that
// the unpruned search returns, the pruned search returns too (so recall
// never drops), with deleted rows and a Match filter too, for 8- and 4-bit
// codes, L2 and cosine (IP over unit vectors). It also checks that pruning
// happened, so the test exercises the skip.
func TestPruneLosesNoTrueNeighbour(t *testing.T) {
	const n, d, nq, k = 20000, 16, 60, 10
	for _, c := range []struct {
		name   string
		bits   int
		metric Metric
	}{{"L2/8bit", 8, L2}, {"L2/4bit", 4, L2}, {"cosine/8bit", 8, IP}} {
		t.Run(c.name, func(t *testing.T) {
			all := clustered(n+nq, d, 200, 7)
			if c.metric == IP {
				normalize(all, d)
			}
			base, queries := all[:n*d], all[n*d:]
			ix := buildIndex(t, Params{Dim: d, NList: 256, M: 8, Bits: c.bits, Metric: c.metric}, base, 10000)
			src := sliceSource{base, d}
			deleted := roaring.New()
			for r := uint32(0); r < n; r += 7 {
				deleted.Add(r)
			}
			odd := func(row uint32) bool { return row%2 == 1 }
			var pruned, hitOn, hitOff int
			for qi := 0; qi < nq; qi++ {
				q := queries[qi*d : (qi+1)*d]
				for _, filtered := range []bool{false, true} {
					f := Filter{Deleted: deleted}
					skip := func(r uint32) bool { return deleted.Contains(r) }
					if filtered {
						f.Match = odd
						skip = func(r uint32) bool { return deleted.Contains(r) || !odd(r) }
					}
					truth := bruteForce(base, d, q, k, c.metric, skip)
					sp := SearchParams{NProbe: 64, Refine: 4, PruneFactor: 1}
					on, st, err := ix.SearchFiltered(q, k, sp, f, src)
					if err != nil {
						t.Fatal(err)
					}
					sp.NoPrune = true
					off, stOff, err := ix.SearchFiltered(q, k, sp, f, src)
					if err != nil {
						t.Fatal(err)
					}
					if stOff.Pruned != 0 {
						t.Fatalf("NoPrune search pruned %d lists", stOff.Pruned)
					}
					pruned += st.Pruned
					rows := func(ns []Neighbor) []uint32 {
						var r []uint32
						for _, x := range ns {
							r = append(r, x.Row)
						}
						return r
					}
					gotOn, gotOff := rows(on), rows(off)
					for _, r := range gotOff {
						if slices.Contains(truth, r) {
							hitOff++
							if !slices.Contains(gotOn, r) {
								t.Fatalf("query %d filtered=%v: true neighbour %d found without pruning, lost with it (pruned %d lists)", qi, filtered, r, st.Pruned)
							}
						}
					}
					for _, r := range gotOn {
						if slices.Contains(truth, r) {
							hitOn++
						}
					}
					if !filtered {
						plain, err := ix.Search(q, k, SearchParams{NProbe: 64, Refine: 4, PruneFactor: 1}, deleted, src)
						if err != nil {
							t.Fatal(err)
						}
						if !slices.Equal(rows(plain), gotOn) {
							t.Fatalf("query %d: Search %v, SearchFiltered %v", qi, rows(plain), gotOn)
						}
					}
				}
			}
			if pruned == 0 {
				t.Fatal("no list was pruned: the test does not exercise pruning")
			}
			t.Logf("pruned %d of %d lists; true neighbours found %d with pruning, %d without", pruned, 2*nq*64, hitOn, hitOff)
		})
	}
}

// TestKthExactBoundsTheTrueKth: the bound kthExactLocked returns is at
// least the exact distance of the true k-th nearest row.
func TestKthExactBoundsTheTrueKth(t *testing.T) {
	const n, d, k = 5000, 8, 10
	all := clustered(n+20, d, 50, 9)
	base := all[:n*d]
	ix := buildIndex(t, Params{Dim: d, NList: 32, M: 4, Bits: 8}, base, n)
	src := sliceSource{base, d}
	s := ix.getScratch()
	defer ix.scratch.Put(s)
	for qi := 0; qi < 20; qi++ {
		q := all[(n+qi)*d : (n+qi+1)*d]
		ix.mu.RLock()
		q4 := ix.prepareLocked(q, 4, s)
		s.cands.reset(k*4, nil)
		for _, l := range s.probeOrder {
			if err := ix.probeLocked(q, l, q4, nil, s, nil); err != nil {
				t.Fatal(err)
			}
		}
		var memo exactMemo
		memo.reset(make([]uint32, k), make([]float32, k))
		bound := ix.kthExactLocked(q, k, src, &s.cands, &memo, s)
		ix.mu.RUnlock()
		truth := bruteForce(base, d, q, k, L2, nil)
		var kth float64
		x := base[int(truth[k-1])*d:][:d]
		for j := range q {
			kth += float64(q[j]-x[j]) * float64(q[j]-x[j])
		}
		if float64(bound) < kth*(1-1e-6) || math.IsInf(float64(bound), 1) {
			t.Fatalf("query %d: bound %g below the true k-th distance %g", qi, bound, kth)
		}
	}
}

// TestKthExactMemo: the bound kthExactLocked returns with a memo of the
// query's last refresh is the bound it returns with an empty one, at
// every list of a probe, and the memo saves reading rows (the k best
// estimates change little from one list to the next).
func TestKthExactMemo(t *testing.T) {
	const n, d, k = 5000, 16, 10
	all := clustered(n+20, d, 50, 11)
	base := all[:n*d]
	ix := buildIndex(t, Params{Dim: d, NList: 32, M: 8, Bits: 4, Metric: L2}, base, n)
	src := &countingSource{sliceSource: sliceSource{base, d}}
	s := ix.getScratch()
	defer ix.scratch.Put(s)
	var memo, empty exactMemo
	var withMemo, without int
	for qi := 0; qi < 20; qi++ {
		q := all[(n+qi)*d : (n+qi+1)*d]
		ix.mu.RLock()
		q4 := ix.prepareLocked(q, 12, s)
		s.cands.reset(k*4, nil)
		memo.reset(make([]uint32, k), make([]float32, k))
		for _, l := range s.probeOrder {
			if err := ix.probeLocked(q, l, q4, nil, s, nil); err != nil {
				t.Fatal(err)
			}
			src.reads = 0
			got := ix.kthExactLocked(q, k, src, &s.cands, &memo, s)
			withMemo += src.reads
			src.reads = 0
			empty.reset(make([]uint32, k), make([]float32, k))
			want := ix.kthExactLocked(q, k, src, &s.cands, &empty, s)
			without += src.reads
			if got != want && !(math.IsInf(float64(got), 1) && math.IsInf(float64(want), 1)) {
				t.Fatalf("query %d after list %d: bound %g with the memo, %g without", qi, l, got, want)
			}
		}
		ix.mu.RUnlock()
	}
	if withMemo*2 > without {
		t.Errorf("the memo saved too little: %d rows read with it, %d without", withMemo, without)
	}
	t.Logf("rows read: %d with the memo, %d without", withMemo, without)
}

// countingSource counts the rows read from it.
type countingSource struct {
	sliceSource
	reads int
}

func (c *countingSource) Vector(row uint32) []float32 {
	c.reads++
	return c.sliceSource.Vector(row)
}
