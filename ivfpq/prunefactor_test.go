package ivfpq

import (
	"errors"
	"math"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
)

// TestPruneFactorRejectsBadValues: a PruneFactor outside (0, 1], NaN
// included, is an ErrBadParams error from both searches, with or without
// a vector source; 0 means the default.
func TestPruneFactorRejectsBadValues(t *testing.T) {
	const n, d = 2000, 8
	base := clustered(n, d, 20, 3)
	ix := buildIndex(t, Params{Dim: d, NList: 16, M: 4, Bits: 4}, base, n)
	src := sliceSource{base, d}
	q := base[:d]
	for _, f := range []float32{float32(math.NaN()), -0.5, 1.0001, float32(math.Inf(1)), float32(math.Inf(-1))} {
		for _, s := range []VectorSource{src, nil} {
			if _, err := ix.Search(q, 5, SearchParams{PruneFactor: f}, nil, s); !errors.Is(err, ErrBadParams) {
				t.Fatalf("Search with PruneFactor %v: err %v, want ErrBadParams", f, err)
			}
			if _, _, err := ix.SearchFiltered(q, 5, SearchParams{PruneFactor: f}, Filter{}, s); !errors.Is(err, ErrBadParams) {
				t.Fatalf("SearchFiltered with PruneFactor %v: err %v, want ErrBadParams", f, err)
			}
		}
	}
	for _, f := range []float32{0, 0.01, 0.5, 1} {
		got, err := ix.Search(q, 5, SearchParams{PruneFactor: f}, nil, src)
		if err != nil || len(got) != 5 {
			t.Fatalf("PruneFactor %v: %d results, err %v", f, len(got), err)
		}
	}
}

// TestPruneFactorStopsEarly: a smaller factor skips at least as many lists
// on every query (the test's bound only tightens), skips more in all, and
// still returns k live rows by exact distance, best first; the default
// factor loses little recall against the lossless 1, and 0 is the
// default.
func TestPruneFactorStopsEarly(t *testing.T) {
	const n, d, nq, k = 20000, 16, 60, 10
	// Few wide clusters, many lists: the bisectors cut through the
	// clusters, so the lossless bound keeps lists the stop can skip.
	all := clustered(n+nq, d, 4, 7)
	base, queries := all[:n*d], all[n*d:]
	ix := buildIndex(t, Params{Dim: d, NList: 256, M: 8, Bits: 4}, base, 10000)
	src := sliceSource{base, d}
	deleted := roaring.New()
	for r := uint32(0); r < n; r += 5 {
		deleted.Add(r)
	}
	skip := func(r uint32) bool { return deleted.Contains(r) }
	factors := []float32{1, DefaultPruneFactor, 0.2}
	pruned := make([]int, len(factors))
	hits := make([]int, len(factors))
	for qi := 0; qi < nq; qi++ {
		q := queries[qi*d : (qi+1)*d]
		truth := bruteForce(base, d, q, k, L2, skip)
		last := -1
		for fi, f := range factors {
			got, st, err := ix.SearchFiltered(q, k, SearchParams{NProbe: 64, Refine: 4, PruneFactor: f}, Filter{Deleted: deleted}, src)
			if err != nil {
				t.Fatal(err)
			}
			if st.Pruned < last {
				t.Fatalf("query %d: factor %v pruned %d lists, a larger factor %d", qi, f, st.Pruned, last)
			}
			last = st.Pruned
			pruned[fi] += st.Pruned
			if len(got) != k {
				t.Fatalf("query %d factor %v: %d results, want %d", qi, f, len(got), k)
			}
			for i, nb := range got {
				if deleted.Contains(nb.Row) {
					t.Fatalf("query %d factor %v: deleted row %d returned", qi, f, nb.Row)
				}
				if exact := -l2f64(q, src.Vector(nb.Row)); math.Abs(float64(nb.Sim)-exact) > 1e-3*(1+math.Abs(exact)) {
					t.Fatalf("query %d factor %v: row %d sim %v, exact %v", qi, f, nb.Row, nb.Sim, exact)
				}
				if i > 0 && nb.Sim > got[i-1].Sim {
					t.Fatalf("query %d factor %v: results out of order at %d", qi, f, i)
				}
				for _, r := range truth {
					if r == nb.Row {
						hits[fi]++
					}
				}
			}
			if f == DefaultPruneFactor {
				def, err := ix.Search(q, k, SearchParams{NProbe: 64, Refine: 4}, deleted, src)
				if err != nil {
					t.Fatal(err)
				}
				for i := range def {
					if def[i].Row != got[i].Row {
						t.Fatalf("query %d: PruneFactor 0 gave %v, the default factor %v", qi, def, got)
					}
				}
			}
		}
	}
	if pruned[2] <= pruned[0] {
		t.Fatalf("factor 0.2 pruned %d lists, factor 1 %d: the test does not exercise the stop", pruned[2], pruned[0])
	}
	if loss := float64(hits[0]-hits[1]) / float64(nq*k); loss > 0.01 {
		t.Fatalf("the default factor lost %.4f of recall@%d against factor 1 (%d against %d hits)", loss, k, hits[1], hits[0])
	}
	t.Logf("lists pruned of %d: %v for factors %v; hits of %d: %v", nq*64, pruned, factors, nq*k, hits)
}

// TestPruneFactorWidensOverSkippedLists: lists a factor below 1 skipped
// do not count as probed, so a filtered search that widens searches them
// again. With MinSim at the exact 10th neighbour's similarity only the
// true top 10 pass; a first probe that missed some of them (the stop is
// lossy, and factor 0.05 skips most lists) must widen until it has all
// ten, so the result is exactly the true top 10.
func TestPruneFactorWidensOverSkippedLists(t *testing.T) {
	const n, d, k = 20000, 16, 10
	base := clustered(n, d, 4, 11)
	ix := buildIndex(t, Params{Dim: d, NList: 256, M: 8, Bits: 4}, base, 10000)
	src := sliceSource{base, d}
	widened := 0
	for qi := 0; qi < 30; qi++ {
		q := base[(qi*131+5)*d:][:d]
		truth := bruteForce(base, d, q, k, L2, nil)
		f := Filter{MinSim: -float32(l2f64(q, src.Vector(truth[k-1]))), HasMinSim: true}
		f.MinSim = math.Nextafter32(f.MinSim, float32(math.Inf(-1))) // float32 rounding of the exact distance
		// Refine 64 keeps every true neighbour among the candidates, so
		// what decides the result is which lists were scanned.
		got, st, err := ix.SearchFiltered(q, k, SearchParams{NProbe: 32, Refine: 64, PruneFactor: 0.05}, f, src)
		if err != nil {
			t.Fatal(err)
		}
		if st.Rounds > 1 {
			widened++
		}
		if len(got) != k {
			t.Fatalf("query %d: %d results, want %d (probed %d, pruned %d, rounds %d)", qi, len(got), k, st.Probed, st.Pruned, st.Rounds)
		}
		for i, nb := range got {
			if nb.Row != truth[i] {
				t.Fatalf("query %d: result %d is row %d, want %d", qi, i, nb.Row, truth[i])
			}
		}
	}
	if widened == 0 {
		t.Fatal("no search widened: the test does not exercise the skipped lists")
	}
	t.Logf("%d of 30 searches widened", widened)
}

// l2f64 is the squared L2 distance in float64.
func l2f64(a, b []float32) float64 {
	var s float64
	for i := range a {
		x := float64(a[i]) - float64(b[i])
		s += x * x
	}
	return s
}
