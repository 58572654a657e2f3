package ivfpq

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
)

// TestSearchFilteredAgainstExact: for allowed sets from 0.05% to 50% of the
// rows, with and without a residual Match, with deletes and with a
// similarity floor, SearchFiltered returns only rows the filter keeps,
// exactly min(k, rows that pass) of them (widening from 8 probes of 64 when
// the probed lists hold too few), and finds the exact filtered top k.
func TestSearchFilteredAgainstExact(t *testing.T) {
	const n, d, k = 8000, 16, 10
	base := clustered(n, d, 40, 3)
	queries := clustered(30, d, 40, 4)
	src := sliceSource{base, d}
	rng := rand.New(rand.NewSource(5))
	deleted := roaring.New()
	for range n / 20 {
		deleted.Add(uint32(rng.Intn(n)))
	}
	for _, bits := range []int{8, 4} {
		ix := buildIndex(t, Params{Dim: d, NList: 64, M: 8, Bits: bits, Metric: L2}, base, n)
		for _, sel := range []float64{0.0005, 0.01, 0.1, 0.5} {
			allow := roaring.New()
			for r := range n {
				if rng.Float64() < sel {
					allow.Add(uint32(r))
				}
			}
			for _, withMatch := range []bool{false, true} {
				for _, withFloor := range []bool{false, true} {
					name := fmt.Sprintf("bits=%d/sel=%g/match=%v/floor=%v", bits, sel, withMatch, withFloor)
					f := Filter{Deleted: deleted, Allow: allow}
					if withMatch {
						f.Match = func(row uint32) bool { return row%3 != 0 }
					}
					hit, total := 0, 0
					for qi := range len(queries) / d {
						q := queries[qi*d : (qi+1)*d]
						if withFloor {
							// A floor that about 30 kept rows pass, halfway
							// between two rows' similarities so that rounding
							// decides nothing.
							all := bruteForce(base, d, q, n, L2, func(r uint32) bool { return !f.keep(r) })
							if len(all) < 2 {
								continue
							}
							i := min(30, len(all)-1)
							a, b := -l2(q, src.Vector(all[i-1])), -l2(q, src.Vector(all[i]))
							f.MinSim, f.HasMinSim = (a+b)/2, true
						}
						skip := func(r uint32) bool {
							return !f.keep(r) || f.HasMinSim && -l2(q, src.Vector(r)) < f.MinSim
						}
						want := bruteForce(base, d, q, k, L2, skip)
						got, st, err := ix.SearchFiltered(q, k, SearchParams{NProbe: 8}, f, src)
						if err != nil {
							t.Fatal(err)
						}
						if len(got) != len(want) {
							t.Fatalf("%s: query %d: %d results, want %d (probed %d lists in %d rounds)",
								name, qi, len(got), len(want), st.Probed, st.Rounds)
						}
						for _, g := range got {
							if skip(g.Row) {
								t.Fatalf("%s: query %d: row %d returned but filtered out", name, qi, g.Row)
							}
							if slices.Contains(want, g.Row) {
								hit++
							}
						}
						total += len(want)
					}
					if total > 0 && float64(hit)/float64(total) < 0.9 {
						t.Errorf("%s: filtered recall@%d %.3f, want >= 0.9", name, k, float64(hit)/float64(total))
					}
				}
			}
		}
	}
}

// l2 is the squared distance between a and b, in float32 like the re-rank.
func l2(a, b []float32) float32 {
	var s float32
	for i := range a {
		x := a[i] - b[i]
		s += x * x
	}
	return s
}

// TestSearchFilteredFillsK: without a filter, a k larger than the default
// probes' lists hold is filled by widening (the K1 10000 returning
// 1,045), up to the whole index when k exceeds it.
func TestSearchFilteredFillsK(t *testing.T) {
	const n, d = 4000, 8
	base := clustered(n, d, 20, 9)
	ix := buildIndex(t, Params{Dim: d, NList: 64, M: 4, Bits: 8, Metric: L2}, base, n)
	src := sliceSource{base, d}
	q := base[:d]
	plain, err := ix.Search(q, 2000, SearchParams{NProbe: 4}, nil, src)
	if err != nil {
		t.Fatal(err)
	}
	if len(plain) >= 2000 {
		t.Fatalf("Search with 4 probes of 64 returned %d of 2000; the test needs it short", len(plain))
	}
	for _, k := range []int{2000, n, n + 10} {
		got, st, err := ix.SearchFiltered(q, k, SearchParams{NProbe: 4}, Filter{}, src)
		if err != nil {
			t.Fatal(err)
		}
		if want := min(k, n); len(got) != want {
			t.Fatalf("k=%d: %d results, want %d (probed %d)", k, len(got), want, st.Probed)
		}
		if st.Probed <= 4 {
			t.Fatalf("k=%d: probed %d lists, want widening", k, st.Probed)
		}
		seen := map[uint32]bool{}
		for i, g := range got {
			if seen[g.Row] {
				t.Fatalf("k=%d: row %d returned twice", k, g.Row)
			}
			seen[g.Row] = true
			if i > 0 && g.Sim > got[i-1].Sim {
				t.Fatalf("k=%d: results not best first at %d", k, i)
			}
		}
	}
	// Widening doubles: 4, 8, 16, 32, 64 lists at most.
	_, st, err := ix.SearchFiltered(q, n+10, SearchParams{NProbe: 4}, Filter{}, src)
	if err != nil {
		t.Fatal(err)
	}
	if st.Probed != 64 || st.Rounds != 5 {
		t.Fatalf("exhausting search probed %d lists in %d rounds, want 64 in 5", st.Probed, st.Rounds)
	}
}

// TestSearchFilteredMatchCalledForCandidatesOnly: Match is never asked about
// a deleted or disallowed row, and at most once per row.
func TestSearchFilteredMatchCalledForCandidatesOnly(t *testing.T) {
	const n, d = 3000, 8
	base := clustered(n, d, 10, 11)
	ix := buildIndex(t, Params{Dim: d, NList: 16, M: 4, Bits: 8, Metric: L2}, base, n)
	allow, deleted := roaring.New(), roaring.New()
	for r := uint32(0); r < n; r += 2 {
		allow.Add(r)
	}
	for r := uint32(0); r < n; r += 6 {
		deleted.Add(r)
	}
	asked := map[uint32]int{}
	f := Filter{Deleted: deleted, Allow: allow, Match: func(r uint32) bool {
		asked[r]++
		return r%4 == 0
	}}
	got, _, err := ix.SearchFiltered(base[d:2*d], 50, SearchParams{NProbe: 2}, f, sliceSource{base, d})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 50 {
		t.Fatalf("%d results, want 50", len(got))
	}
	for r, c := range asked {
		if !allow.Contains(r) || deleted.Contains(r) || c != 1 {
			t.Fatalf("Match asked about row %d %d times (allowed %v, deleted %v)", r, c, allow.Contains(r), deleted.Contains(r))
		}
	}
}
