package ivfpq

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/memrl/memrl/simd"
	"github.com/memrl/memrl/vfs"
)

// batchCase is an index shape the batch tests run on.
type batchCase struct {
	name string
	p    Params
	unit bool // normalise the data (IP over unit vectors: scored as L2)
}

var batchCases = []batchCase{
	{"L2PQ4", Params{Dim: 32, NList: 64, M: 16, Bits: 4, Metric: L2}, false},
	{"L2PQ8", Params{Dim: 32, NList: 64, M: 8, Bits: 8, Metric: L2}, false},
	{"L2PQ4odd", Params{Dim: 30, NList: 48, M: 7, Bits: 4, Metric: L2}, false},
	{"IPunitPQ4", Params{Dim: 32, NList: 64, M: 16, Bits: 4, Metric: IP}, true},
	{"IPPQ4", Params{Dim: 32, NList: 64, M: 16, Bits: 4, Metric: IP}, false},
}

// sameNeighbors reports whether two result lists are the same rows in the
// same order with the same similarities.
func sameNeighbors(a, b []Neighbor) bool { return slices.Equal(a, b) }

// TestSearchBatchMatchesSearch: for every query, SearchBatch returns
// exactly what Search returns (rows, order and similarities), for each
// code kind and metric, in memory and mapped from a saved file (16-bit
// terms), with and without tombstones, pruning off, lossless and
// adaptive, at probe counts below, at and above the first pruning
// refresh and at every list, on one worker and on several, and with a
// query count that leaves partial coarse-step tiles and chunks. Run under
// -race it also checks that the workers share nothing they write.
func TestSearchBatchMatchesSearch(t *testing.T) {
	const n, nq = 4000, 70 // 70: four whole coarse-step tiles and part of one
	for _, tc := range batchCases {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.p.Dim
			all := clustered(n+nq, d, 40, 29)
			if tc.unit {
				normalize(all, d)
			}
			base, qs := all[:n*d], all[n*d:]
			ix := buildIndex(t, tc.p, base, 3000)
			kinds := map[string]*Index{"memory": ix}
			if tc.p.Bits == 4 && tc.p.l2ADC() {
				kinds["mapped"], _, _ = saveOpen(t, ix, false)
			}
			deleted := roaring.New()
			for r := uint32(0); r < n; r += 7 {
				deleted.Add(r)
			}
			src := sliceSource{base, d}
			for kind, x := range kinds {
				for _, sp := range []SearchParams{
					{NProbe: 1}, {NProbe: 6, Refine: 3}, {NProbe: 8}, {NProbe: 9, PruneFactor: 1},
					{NProbe: 20}, {NProbe: 33, PruneFactor: 0.3}, {NProbe: 40, NoPrune: true}, {NProbe: 1000},
				} {
					for _, del := range []*roaring.Bitmap{nil, deleted} {
						for _, threads := range []int{1, 3} {
							if threads > 1 && del == nil {
								continue // the workers are checked with tombstones; halves the test under -race
							}
							name := fmt.Sprintf("%s %+v deleted=%v threads=%d", kind, sp, del != nil, threads)
							got, err := x.SearchBatch(qs, 10, sp, del, src, threads)
							if err != nil {
								t.Fatalf("%s: %v", name, err)
							}
							if len(got) != nq {
								t.Fatalf("%s: %d result lists for %d queries", name, len(got), nq)
							}
							for i := range nq {
								want, err := x.Search(qs[i*d:(i+1)*d], 10, sp, del, src)
								if err != nil {
									t.Fatal(err)
								}
								if !sameNeighbors(got[i], want) {
									t.Fatalf("%s query %d:\n batch  %v\n search %v", name, i, got[i], want)
								}
							}
						}
					}
				}
				// Without vectors: no re-rank, no pruning; the same.
				got, err := x.SearchBatch(qs, 5, SearchParams{NProbe: 12}, nil, nil, 2)
				if err != nil {
					t.Fatal(err)
				}
				for i := range nq {
					want, _ := x.Search(qs[i*d:(i+1)*d], 5, SearchParams{NProbe: 12}, nil, nil)
					if !sameNeighbors(got[i], want) {
						t.Fatalf("%s without vectors, query %d:\n batch  %v\n search %v", kind, i, got[i], want)
					}
				}
			}
		})
	}
}

// TestSearchBatchFilteredMatchesSearchFiltered: SearchBatchFiltered
// returns SearchFiltered's results, widening included: an allowed set of
// 2% of the rows (most queries widen and are searched alone), one of 60%
// (few do), a Match, and a MinSim some queries' neighbours miss.
func TestSearchBatchFilteredMatchesSearchFiltered(t *testing.T) {
	const n, nq, d = 6000, 150, 32
	all := clustered(n+nq, d, 40, 31)
	base, qs := all[:n*d], all[n*d:]
	ix := buildIndex(t, Params{Dim: d, NList: 64, M: 16, Bits: 4, Metric: L2}, base, 3000)
	src := sliceSource{base, d}
	sparse, dense := roaring.New(), roaring.New()
	for r := uint32(0); r < n; r++ {
		if r%50 == 3 {
			sparse.Add(r)
		}
		if r%5 < 3 {
			dense.Add(r)
		}
	}
	// The median 10th-neighbour similarity: about half the queries have
	// fewer than 10 neighbours above it.
	var tenth []float32
	for i := range nq {
		res, _ := ix.Search(qs[i*d:(i+1)*d], 10, SearchParams{NProbe: 64}, nil, src)
		tenth = append(tenth, res[9].Sim)
	}
	slices.Sort(tenth)
	for name, f := range map[string]Filter{
		"sparse": {Allow: sparse},
		"dense":  {Allow: dense, Deleted: sparse},
		"match":  {Match: func(row uint32) bool { return row%3 != 0 }},
		"minsim": {MinSim: tenth[nq/2], HasMinSim: true},
	} {
		sp := SearchParams{NProbe: 10}
		got, st, err := ix.SearchBatchFiltered(qs, 10, sp, f, src, 2)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d of %d queries searched alone", name, st.Alone, nq)
		if name == "sparse" && st.Alone == 0 {
			t.Fatalf("%s: no query widened", name)
		}
		matchesSearchFiltered(t, name, ix, qs, got, sp, f, src)
	}
}

// matchesSearchFiltered fails t unless got[i], a batch's k = 10 results,
// are SearchFiltered's for each query i of qs (rows, order and
// similarities).
func matchesSearchFiltered(t *testing.T, name string, ix *Index, qs []float32, got [][]Neighbor, sp SearchParams, f Filter, src VectorSource) {
	t.Helper()
	d := ix.Params().Dim
	for i := range len(qs) / d {
		want, _, err := ix.SearchFiltered(qs[i*d:(i+1)*d], 10, sp, f, src)
		if err != nil {
			t.Fatal(err)
		}
		if !sameNeighbors(got[i], want) {
			t.Fatalf("%s query %d:\n batch  %v\n single %v", name, i, got[i], want)
		}
	}
}

// TestSearchBatchRecall holds the batch search to the exact top 10 on
// held-out queries: recall@10 at least 0.8 at 24 of 64 lists, and equal
// to Search's.
func TestSearchBatchRecall(t *testing.T) {
	const n, nq, d, k = 8000, 100, 32, 10
	all := clustered(n+nq, d, 1, 37) // one blob: neighbours spread over lists
	base, qs := all[:n*d], all[n*d:]
	ix := buildIndex(t, Params{Dim: d, NList: 64, M: 16, Bits: 4, Metric: L2}, base, 4000)
	sp := SearchParams{NProbe: 24}
	got, err := ix.SearchBatch(qs, k, sp, nil, sliceSource{base, d}, 2)
	if err != nil {
		t.Fatal(err)
	}
	hit := 0
	for i := range nq {
		truth := bruteForce(base, d, qs[i*d:(i+1)*d], k, L2, nil)
		for _, g := range got[i] {
			if slices.Contains(truth, g.Row) {
				hit++
			}
		}
	}
	recall := float64(hit) / float64(nq*k)
	single := recallAt(t, ix, base, qs, d, k, sp)
	t.Logf("recall@10: batch %.4f, Search %.4f", recall, single)
	if recall < 0.8 || recall != single {
		t.Fatalf("recall@10: batch %.4f, Search %.4f; want equal and >= 0.8", recall, single)
	}
}

// TestSearchBatchDamagedList: a query that probes a damaged list is
// searched alone, around the damage, and gets Search's results; the stats
// say so. Without vectors the batch fails with ErrCorrupt, as Search does.
func TestSearchBatchDamagedList(t *testing.T) {
	const n, nq, d = 6000, 60, 32
	all := clustered(n+nq, d, 40, 41)
	base, qs := all[:n*d], all[n*d:]
	ix := buildIndex(t, Params{Dim: d, NList: 32, M: 16, Bits: 4, Metric: L2}, base, 3000)
	dir := t.TempDir()
	if err := ix.Save(vfs.Default, dir); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	path := filepath.Join(dir, FileName)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h, err := decodeHeader(b, uint64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	const l = 3
	e, _ := getDirEntry(b[h.dirOff+uint64(l)*dirEntrySize:], h.terms16())
	b[h.dataOff+e.off+pad8(4*uint64(e.n))+1] ^= 0x04 // a code byte
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	ix, err = Open(vfs.Default, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	src := sliceSource{base, d}
	sp := SearchParams{NProbe: 24}
	if _, err := ix.SearchBatch(qs, 10, sp, nil, nil, 2); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("batch without vectors: %v, want ErrCorrupt", err)
	}
	got, st, err := ix.SearchBatchFiltered(qs, 10, sp, Filter{}, src, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Damaged || st.Alone == 0 {
		t.Fatalf("stats %+v: want Damaged and queries searched alone", st)
	}
	for i := range nq {
		want, _, err := ix.SearchFiltered(qs[i*d:(i+1)*d], 10, sp, Filter{}, src)
		if err != nil {
			t.Fatal(err)
		}
		if !sameNeighbors(got[i], want) {
			t.Fatalf("query %d:\n batch  %v\n single %v", i, got[i], want)
		}
	}
}

// TestSearchBatchBadInput: a query matrix that is not whole queries is
// refused with ErrBadParams, as is an invalid PruneFactor; no queries and
// k <= 0 return empty results; a closed index ErrClosed.
func TestSearchBatchBadInput(t *testing.T) {
	const n, d = 2000, 16
	base := clustered(n, d, 10, 43)
	ix := buildIndex(t, Params{Dim: d, NList: 16, M: 8, Bits: 4, Metric: L2}, base, n)
	src := sliceSource{base, d}
	if _, err := ix.SearchBatch(base[:d+1], 10, SearchParams{}, nil, src, 1); !errors.Is(err, ErrBadParams) {
		t.Fatalf("ragged queries: %v", err)
	}
	if _, err := ix.SearchBatch(base[:d], 10, SearchParams{PruneFactor: 2}, nil, src, 1); !errors.Is(err, ErrBadParams) {
		t.Fatalf("PruneFactor 2: %v", err)
	}
	if res, err := ix.SearchBatch(nil, 10, SearchParams{}, nil, src, 2); err != nil || len(res) != 0 {
		t.Fatalf("no queries: %v, %v", res, err)
	}
	if res, err := ix.SearchBatch(base[:3*d], 0, SearchParams{}, nil, src, 2); err != nil || len(res) != 3 || res[0] != nil {
		t.Fatalf("k 0: %v, %v", res, err)
	}
	ix.Close()
	if _, err := ix.SearchBatch(base[:3*d], 10, SearchParams{}, nil, src, 2); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed: %v", err)
	}
}

// TestSearchBatchAllocations: the batch's scratch is pooled, so a batch
// allocates its results (one slice of n slices, one of n·k Neighbors),
// its shared state and, on several workers, their goroutines, whatever n:
// no allocation per query. Skipped under -race (sync.Pool drops Puts at random there);
// scripts/test.sh runs the package's allocation tests without it.
func TestSearchBatchAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops a random quarter of Puts under -race; scripts/test.sh runs this test without it")
	}
	const d, n = 32, 3000
	base := clustered(n, d, 20, 5)
	var src VectorSource = sliceSource{x: base, dim: d}
	start := simd.Level()
	t.Cleanup(func() { _ = simd.SetLevel(start) })
	for _, lv := range simd.Levels() {
		if err := simd.SetLevel(lv); err != nil {
			t.Fatal(err)
		}
		for _, bits := range []int{8, 4} {
			ix := buildIndex(t, Params{Dim: d, NList: 16, M: 8, Bits: bits, Metric: L2}, base, n)
			sp := SearchParams{NProbe: 12, Refine: 4}
			for _, threads := range []int{1, 2} {
				var allocs []float64
				for _, nq := range []int{10, 200} {
					qs := clustered(nq, d, 20, 6)
					for range 2 { // warm the pools
						if _, err := ix.SearchBatch(qs, 10, sp, nil, src, threads); err != nil {
							t.Fatal(err)
						}
					}
					a := testing.AllocsPerRun(20, func() {
						if _, err := ix.SearchBatch(qs, 10, sp, nil, src, threads); err != nil {
							t.Fatal(err)
						}
					})
					allocs = append(allocs, a)
				}
				limit := 3.0 // the results and the run's shared state
				if threads > 1 {
					// And the goroutines, and a scratch the pool did not
					// have at hand (sync.Pool keeps one per processor):
					// its arrays, a few whatever the queries.
					limit = 40
				}
				if allocs[0] > limit || allocs[1] > limit {
					t.Errorf("%s, %d-bit codes, %d threads: %v allocations per batch of 10 and of 200 queries, want at most %v, none per query", lv, bits, threads, allocs, limit)
				}
			}
		}
	}
}
