package ivfpq

import (
	"testing"

	"github.com/memrl/memrl/simd"
)

// TestSearchAllocations holds a search to the allocations its doc promises:
// the scratch is pooled, so a query allocates its result slice and nothing
// else, on every kernel level and for each kind of code: 8-bit, 4-bit with
// float terms (in memory) and 4-bit with 16-bit terms (a saved, mapped
// index). An allocation per list scanned once cost a fifth of a 1M search
// in malloc and the collector, unnoticed by every recall test.
//
// Under the race detector sync.Pool drops Puts at random, so the count is
// meaningless there; scripts/test.sh runs this test once more without it.
func TestSearchAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops a random quarter of Puts under -race; scripts/test.sh runs this test without it")
	}
	const d, n = 32, 3000
	base := clustered(n, d, 20, 5)
	var src VectorSource = sliceSource{x: base, dim: d} // boxed once, not per call
	q := clustered(1, d, 20, 6)
	start := simd.Level()
	t.Cleanup(func() { _ = simd.SetLevel(start) })
	for _, lv := range simd.Levels() {
		if err := simd.SetLevel(lv); err != nil {
			t.Fatal(err)
		}
		for _, bits := range []int{8, 4} {
			ix := buildIndex(t, Params{Dim: d, NList: 16, M: 8, Bits: bits, Metric: L2}, base, n)
			kinds := map[string]*Index{"memory": ix}
			if bits == 4 {
				kinds["mapped"], _, _ = saveOpen(t, ix, false)
			}
			for kind, x := range kinds {
				sp := SearchParams{NProbe: 8, Refine: 4}
				if _, err := x.Search(q, 10, sp, nil, src); err != nil { // warm the pool
					t.Fatal(err)
				}
				a := testing.AllocsPerRun(50, func() {
					if _, err := x.Search(q, 10, sp, nil, src); err != nil {
						t.Fatal(err)
					}
				})
				if a > 1 {
					t.Errorf("%s, %d-bit codes, %s index: %v allocations per search, want 1 (the result)", lv, bits, kind, a)
				}
			}
		}
	}
}
