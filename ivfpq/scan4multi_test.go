package ivfpq

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/memrl/memrl/simd"
)

// TestScan4MultiMatchesScan4: scanning a list for 1 to 4 queries at once
// (scanList4MultiLocked, the batch's scan) leaves every query's candidates
// exactly as scanListLocked (Search's) does, pushed in the same order: L2
// with float terms (in memory), with 16-bit terms (a saved index's base
// segments) plus float-term tails added after opening, and IP (no terms,
// the kernel's own threshold, down to thresholds of 0), an odd M, with and
// without a filter, from empty candidate sets and from ones already cut
// to a tight bound by scans of other lists.
func TestScan4MultiMatchesScan4(t *testing.T) {
	const n, nq = 3000, 24
	for _, tc := range []batchCase{
		{"L2PQ4", Params{Dim: 32, NList: 24, M: 16, Bits: 4, Metric: L2}, false},
		{"L2PQ4odd", Params{Dim: 30, NList: 24, M: 7, Bits: 4, Metric: L2}, false},
		{"IPPQ4", Params{Dim: 32, NList: 24, M: 16, Bits: 4, Metric: IP}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.p.Dim
			all := clustered(n+300+nq, d, 30, 41)
			base, extra, qs := all[:n*d], all[n*d:(n+300)*d], all[(n+300)*d:]
			ix := buildIndex(t, tc.p, base, 2000)
			kinds := map[string]*Index{"memory": ix}
			if tc.p.l2ADC() {
				x, _, _ := saveOpen(t, ix, false)
				for i := range 300 {
					if err := x.Add(uint32(n+i), extra[i*d:(i+1)*d]); err != nil {
						t.Fatal(err)
					}
				}
				kinds["mapped+tail"] = x
			}
			deleted := roaring.New()
			for r := uint32(0); r < n+300; r += 5 {
				deleted.Add(r)
			}
			for kind, x := range kinds {
				for _, f := range []*Filter{nil, {Deleted: deleted}} {
					for _, limit := range []int{10, 60} {
						for _, seed := range []int{0, 3} {
							name := fmt.Sprintf("%s filter=%v limit=%d seed=%d", kind, f != nil, limit, seed)
							checkScan4Multi(t, name, x, qs, f, limit, seed)
						}
					}
				}
			}
		})
	}
}

// checkScan4Multi scans every list of x for groups of 1..4 of the queries
// qs both ways and compares the candidate sets. Before each list, each
// query's set holds what scans of seed other lists left in it.
func checkScan4Multi(t *testing.T, name string, x *Index, qs []float32, f *Filter, limit, seed int) {
	t.Helper()
	p := x.p
	d := p.Dim
	nq := len(qs) / d
	x.mu.RLock()
	defer x.mu.RUnlock()
	s := x.getScratch()
	defer x.scratch.Put(s)
	type query struct {
		q    []float32
		q4   lut4
		lut8 []byte
	}
	queries := make([]query, nq)
	for i := range queries {
		q := qs[i*d : (i+1)*d]
		q4 := x.buildLUT(q, s)
		queries[i] = query{q, q4, slices.Clone(s.lut8)}
	}
	bias := func(i, l int) float32 {
		q := queries[i].q
		return x.listBias(q, l, simd.L2Sq(q, x.coarse[l*d:(l+1)*d]))
	}
	// seeded returns query i's candidates after scans of seed lists other
	// than l (in a fixed order).
	seeded := func(i, l int) candSet {
		var c candSet
		c.reset(limit, nil)
		for j := 1; j <= seed; j++ {
			o := (l + j*7) % p.NList
			if x.checkList(o) != nil {
				t.Fatalf("%s: list %d damaged", name, o)
			}
			x.scanListLocked(queries[i].q, o, &x.lists[o].base, bias(i, o), queries[i].q4, nil, queries[i].lut8, f, &c, s)
		}
		c.settle()
		return c
	}
	clone := func(c candSet) candSet {
		c.score, c.row = slices.Clone(c.score), slices.Clone(c.row)
		return c
	}
	var t4 scan4Scratch
	r := rand.New(rand.NewPCG(uint64(seed), uint64(limit)))
	for l := range p.NList {
		if err := x.checkList(l); err != nil {
			t.Fatalf("%s: list %d: %v", name, l, err)
		}
		base := &x.lists[l].base
		for g := 1; g <= simd.FastScanMaxQueries; g++ {
			idx := r.Perm(nq)[:g]
			want := make([]candSet, g)
			got := make([]candSet, g)
			batch := make([]scan4Query, g)
			for k, i := range idx {
				c := seeded(i, l)
				want[k], got[k] = clone(c), clone(c)
				x.scanListLocked(queries[i].q, l, base, bias(i, l), queries[i].q4, nil, queries[i].lut8, f, &want[k], s)
				batch[k] = scan4Query{q4: queries[i].q4, lut8: queries[i].lut8, bias: bias(i, l), c: &got[k]}
			}
			x.scanList4MultiLocked(l, base, batch, f, &t4)
			for k := range g {
				if !slices.Equal(got[k].score, want[k].score) || !slices.Equal(got[k].row, want[k].row) || got[k].bound != want[k].bound {
					t.Fatalf("%s list %d, query %d of %d: multi-query scan\n rows %v scores %v bound %v\nsingle-query scan\n rows %v scores %v bound %v",
						name, l, k, g, got[k].row, got[k].score, got[k].bound, want[k].row, want[k].score, want[k].bound)
				}
			}
		}
	}
}
