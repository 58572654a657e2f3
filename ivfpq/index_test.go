package ivfpq

import (
	"cmp"
	"errors"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/memrl/memrl/simd"
	"github.com/memrl/memrl/vfs"
)

func TestRecallClustered20k(t *testing.T) {
	const n, d, nq = 20000, 32, 100
	all := clustered(n+nq, d, 200, 21)
	base, queries := all[:n*d], all[n*d:]
	for _, tc := range []struct {
		name   string
		p      Params
		sp     SearchParams
		metric Metric
	}{
		{"L2-8bit", Params{Dim: d, NList: 64, M: 16, Bits: 8, Metric: L2}, SearchParams{NProbe: 8, Refine: 8}, L2},
		{"L2-4bit", Params{Dim: d, NList: 64, M: 16, Bits: 4, Metric: L2}, SearchParams{NProbe: 8, Refine: 16}, L2},
		{"IP-8bit", Params{Dim: d, NList: 64, M: 16, Bits: 8, Metric: IP}, SearchParams{NProbe: 8, Refine: 8}, IP},
		{"IP-4bit", Params{Dim: d, NList: 64, M: 16, Bits: 4, Metric: IP}, SearchParams{NProbe: 8, Refine: 16}, IP},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, q := base, queries
			if tc.metric == IP {
				b, q = slices.Clone(base), slices.Clone(queries)
				normalize(b, d)
				normalize(q, d)
			}
			ix := buildIndex(t, tc.p, b, 8000)
			defer ix.Close()
			if ix.Rows() != n {
				t.Fatalf("Rows() = %d, want %d", ix.Rows(), n)
			}
			r := recallAt(t, ix, b, q, d, 10, tc.sp)
			t.Logf("%s: recall@10 = %.3f", tc.name, r)
			if r < 0.9 {
				t.Errorf("recall@10 = %.3f, want >= 0.9", r)
			}
		})
	}
}

// TestInnerProductOverUnnormalisedVectors covers the inner-product ADC
// used when the training sample is not unit-norm.
func TestInnerProductOverUnnormalisedVectors(t *testing.T) {
	const n, d, nq = 5000, 16, 50
	all := clustered(n+nq, d, 50, 13)
	p := Params{Dim: d, NList: 16, M: 8, Bits: 8, Metric: IP}
	ix := buildIndex(t, p, all[:n*d], n)
	if ix.p.unitIP {
		t.Fatal("unnormalised sample marked unit-norm")
	}
	r := recallAt(t, ix, all[:n*d], all[n*d:], d, 10, SearchParams{NProbe: 16, Refine: 16})
	t.Logf("recall@10 = %.3f", r)
	if r < 0.9 {
		t.Errorf("recall@10 = %.3f, want >= 0.9", r)
	}
}

func TestApproximateSimWithoutSource(t *testing.T) {
	const n, d = 3000, 16
	base := clustered(n, d, 20, 5)
	normalize(base, d)
	ix := buildIndex(t, Params{Dim: d, NList: 16, M: 8, Bits: 8, Metric: IP}, base, n)
	if !ix.p.unitIP {
		t.Fatal("unit-norm sample not detected")
	}
	q := base[11*d : 12*d]
	got, err := ix.Search(q, 3, SearchParams{NProbe: 16}, nil, nil)
	if err != nil || len(got) != 3 {
		t.Fatalf("search: %v %v", got, err)
	}
	for _, g := range got {
		v := base[int(g.Row)*d : int(g.Row+1)*d]
		var dot float32
		for j := range q {
			dot += q[j] * v[j]
		}
		if diff := dot - g.Sim; diff > 0.05 || diff < -0.05 {
			t.Errorf("row %d: approximate Sim %g, exact %g", g.Row, g.Sim, dot)
		}
	}
}

func TestSearchSimIsExactAndSorted(t *testing.T) {
	const n, d = 3000, 16
	base := clustered(n, d, 20, 5)
	ix := buildIndex(t, Params{Dim: d, NList: 16, M: 4, Bits: 8}, base, n)
	src := sliceSource{base, d}
	q := base[7*d : 8*d]
	got, err := ix.Search(q, 10, SearchParams{NProbe: 16, Refine: 10}, nil, src)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 10 || got[0].Row != 7 || got[0].Sim != 0 {
		t.Fatalf("query equal to row 7: got %+v", got)
	}
	for i, g := range got {
		v := src.Vector(g.Row)
		var s float32
		for j := range q {
			s -= (q[j] - v[j]) * (q[j] - v[j])
		}
		if diff := s - g.Sim; diff > 1e-3 || diff < -1e-3 {
			t.Errorf("result %d: Sim %g, exact %g", i, g.Sim, s)
		}
		if i > 0 && got[i-1].Sim < g.Sim {
			t.Errorf("results not sorted at %d", i)
		}
	}
}

func TestAddsAfterTrainingAreFound(t *testing.T) {
	const d = 16
	all := clustered(2500, d, 20, 1)
	ix, err := Train(Params{Dim: d, NList: 16, M: 8, Bits: 8}, all[:2000*d], 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	if ix.Rows() != 0 {
		t.Fatalf("fresh index has %d rows", ix.Rows())
	}
	fresh := all[2000*d:] // points the training never saw
	src := sliceSource{fresh, d}
	for i := 0; i < 500; i++ {
		if err := ix.Add(uint32(i), fresh[i*d:(i+1)*d]); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 500; i++ {
		got, err := ix.Search(fresh[i*d:(i+1)*d], 1, SearchParams{NProbe: 4, Refine: 16}, nil, src)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Sim != 0 {
			t.Fatalf("row %d not found by its own vector: %+v", i, got)
		}
	}
}

func TestAddOutOfOrderChangesNothing(t *testing.T) {
	const d = 8
	ix, err := Train(Params{Dim: d, NList: 4, M: 2, Bits: 4}, clustered(500, d, 4, 1), 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	empty := ix.Bytes()
	v := make([]float32, d)
	if err := ix.Add(1, v); !errors.Is(err, ErrOutOfOrder) {
		t.Fatalf("Add(1) on empty index: %v", err)
	}
	if err := ix.Add(0, v[:3]); !errors.Is(err, ErrBadParams) {
		t.Fatalf("Add with short vector: %v", err)
	}
	if err := ix.AddBatch(5, make([]float32, 2*d), 1); !errors.Is(err, ErrOutOfOrder) {
		t.Fatalf("AddBatch(5): %v", err)
	}
	if ix.Rows() != 0 || ix.Bytes() != empty || ix.listBytes != 0 {
		t.Fatalf("failed adds changed the index: rows %d bytes %d", ix.Rows(), ix.Bytes())
	}
}

func TestDeletedRowsNeverReturned(t *testing.T) {
	const n, d = 4000, 16
	base := clustered(n, d, 30, 8)
	for _, bits := range []int{8, 4} {
		ix := buildIndex(t, Params{Dim: d, NList: 16, M: 8, Bits: bits}, base, n)
		deleted := roaring.New()
		for i := uint32(0); i < n; i += 3 {
			deleted.Add(i)
		}
		src := sliceSource{base, d}
		for qi := 0; qi < 100; qi++ {
			q := base[qi*d : (qi+1)*d]
			got, err := ix.Search(q, 10, SearchParams{NProbe: 16, Refine: 16}, deleted, src)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 10 {
				t.Fatalf("bits %d: %d results, want 10", bits, len(got))
			}
			for _, g := range got {
				if deleted.Contains(g.Row) {
					t.Fatalf("bits %d: deleted row %d returned", bits, g.Row)
				}
			}
			// A live query row finds itself.
			if !deleted.Contains(uint32(qi)) && (got[0].Row != uint32(qi) || got[0].Sim != 0) {
				t.Fatalf("bits %d: live row %d not found by its own vector: %+v", bits, qi, got[0])
			}
		}
	}
}

func TestConcurrentSearchesAndAdds(t *testing.T) {
	const n, d = 2000, 16
	base := clustered(n+400, d, 20, 4)
	for _, bits := range []int{8, 4} {
		ix := buildIndex(t, Params{Dim: d, NList: 16, M: 8, Bits: bits}, base[:n*d], n)
		src := sliceSource{base, d}
		var wg sync.WaitGroup
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				for i := 0; i < 100; i++ {
					q := base[((g*100+i)%n)*d:][:d]
					got, err := ix.Search(q, 5, SearchParams{NProbe: 1 + g*5, Refine: 1 + g}, nil, src)
					if err != nil || len(got) == 0 {
						t.Errorf("search: %v, %d results", err, len(got))
						return
					}
				}
			}(g)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			dir := t.TempDir()
			for i := 0; i < 3; i++ {
				if err := ix.Save(vfs.Default, dir); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := n; i < n+400; i++ {
				if err := ix.Add(uint32(i), base[i*d:(i+1)*d]); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		wg.Wait()
		if ix.Rows() != n+400 {
			t.Fatalf("Rows() = %d after concurrent adds", ix.Rows())
		}
	}
}

func TestTrainRejectsBadInput(t *testing.T) {
	for _, p := range []Params{
		{Dim: 0, NList: 4, M: 1, Bits: 8},
		{Dim: 8, NList: 4, M: 9, Bits: 8}, // M may leave Dim undivided, not exceed it
		{Dim: 8, NList: 4, M: 2, Bits: 6},
		{Dim: 8, NList: 0, M: 2, Bits: 8},
		{Dim: 8, NList: 4, M: 2, Bits: 8, Metric: 9},
	} {
		if _, err := Train(p, make([]float32, 8*1000), 1, 1); !errors.Is(err, ErrBadParams) {
			t.Errorf("Train(%+v): %v, want ErrBadParams", p, err)
		}
	}
	if _, err := Train(Params{Dim: 8, NList: 4, M: 2, Bits: 8}, make([]float32, 8*100), 1, 1); !errors.Is(err, ErrBadParams) {
		t.Errorf("Train with 100 points for 256 PQ centroids: %v", err)
	}
}

func TestDefaultParams(t *testing.T) {
	for _, c := range []struct{ n, dim, nlist, m, bits int }{
		{1_000_000, 128, 2048, 52, 4},
		{100_000, 128, 512, 52, 4},
		{10_000, 128, 256, 52, 4}, // 3·√10000 = 300 → 256, and 256·39 ≤ 10,000
		{1_000_000, 768, 2048, 128, 4},
		{1_000_000, 96, 2048, 40, 4},
		{1_000_000, 99, 2048, 40, 4}, // sub-spaces of 3 and 2: M need not divide dim
		{1_000_000, 3, 2048, 1, 8},
		{100, 128, 2, 52, 4}, // 100/39: at most 2 lists
	} {
		p := DefaultParams(c.n, c.dim, L2)
		if p.NList != c.nlist || p.M != c.m || p.Bits != c.bits {
			t.Errorf("DefaultParams(%d, %d) = %+v, want NList %d M %d Bits %d", c.n, c.dim, p, c.nlist, c.m, c.bits)
		}
		if 8*p.codeSize() != p.M*p.Bits {
			t.Errorf("DefaultParams(%d, %d): code of %d bytes for M %d × %d bits", c.n, c.dim, p.codeSize(), p.M, p.Bits)
		}
	}
	for _, n := range []int{0, 1, 100, 10_000, 1 << 30} {
		for _, d := range []int{1, 3, 96, 128, 768, 1536} {
			if err := DefaultParams(n, d, IP).Validate(); err != nil {
				t.Errorf("DefaultParams(%d, %d): %v", n, d, err)
			}
		}
	}
}

// TestDefaultM: 8-bit codes get the largest divisor of dim up to dim/4
// (capped at 64); 4-bit codes 13/32 of dim rounded to an even number, at
// most 128, and 0 below 4 dimensions.
func TestDefaultM(t *testing.T) {
	for _, c := range []struct{ dim, m8, m4 int }{
		{1, 1, 0}, {3, 1, 0}, {4, 1, 2}, {5, 1, 2}, {8, 2, 4}, {12, 3, 4}, {99, 11, 40},
		{100, 25, 40}, {128, 32, 52}, {256, 64, 104}, {314, 2, 128}, {384, 64, 128},
		{768, 64, 128}, {1536, 64, 128}, {1000, 50, 128}, {257, 1, 104},
	} {
		if got := DefaultM(c.dim, 8); got != c.m8 {
			t.Errorf("DefaultM(%d, 8) = %d, want %d", c.dim, got, c.m8)
		}
		if got := DefaultM(c.dim, 4); got != c.m4 {
			t.Errorf("DefaultM(%d, 4) = %d, want %d", c.dim, got, c.m4)
		}
	}
}

// TestDefaultNProbe: √nlist, at least 24 and at most nlist.
func TestDefaultNProbe(t *testing.T) {
	for nlist, want := range map[int]int{0: 1, 1: 1, 2: 2, 16: 16, 24: 24, 128: 24, 256: 24, 576: 24, 1024: 32, 4096: 64, 65536: 256} {
		if got := DefaultNProbe(nlist); got != want {
			t.Errorf("DefaultNProbe(%d) = %d, want %d", nlist, got, want)
		}
	}
}

// TestOddMFastScan covers 4-bit codes with an odd number of sub-spaces,
// whose last fast-scan group has empty high nibbles: every vector's
// approximate score (all lists probed, every vector kept, no re-rank) must
// match the float distance to its reconstruction up to byte quantization.
func TestOddMFastScan(t *testing.T) {
	const n, d, m = 1000, 12, 3
	base := clustered(n, d, 20, 17)
	ix := buildIndex(t, Params{Dim: d, NList: 8, M: m, Bits: 4}, base, n)
	dir := t.TempDir()
	if err := ix.Save(vfs.Default, dir); err != nil {
		t.Fatal(err)
	}
	ix2, err := Open(vfs.Default, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ix2.Close()
	want := make(map[uint32]float32)
	code := make([]byte, m)
	rec := make([]float32, d)
	q := base[5*d : 6*d]
	var maxD float32
	for l := range ix2.lists {
		seg := ix2.lists[l].base
		for i, row := range seg.ids {
			getCode4(seg.codes, i, m, code)
			decodePQ(ix2.p, code, ix2.book, rec)
			var dist float32
			for j := range q {
				e := q[j] - ix2.coarse[l*d+j] - rec[j]
				dist += e * e
			}
			want[row] = dist
			maxD = max(maxD, dist)
		}
	}
	if len(want) != n {
		t.Fatalf("lists hold %d rows", len(want))
	}
	got, err := ix2.Search(q, n, SearchParams{NProbe: 8, Refine: 1}, nil, nil)
	if err != nil || len(got) != n {
		t.Fatalf("search: %d results, %v", len(got), err)
	}
	for _, g := range got {
		if diff := -g.Sim - want[g.Row]; diff > 0.02*maxD || diff < -0.02*maxD {
			t.Fatalf("row %d: approximate distance %g, reconstruction %g", g.Row, -g.Sim, want[g.Row])
		}
	}
}

// TestCoarseStepMatchesL2 holds the search's coarse step to the plain
// squared L2 distance of every centroid, for list counts that do and do
// not fill the last block, at several data scales: exact for the probed
// lists (exactProbesLocked), within half precision's rounding for the
// others (dot products over the half-precision blocked centroids plus
// precomputed norms, whose error is at most about 2⁻¹⁰·(‖q‖² + ‖c‖²)), and
// checks that the probed lists are the nearest ones up to that rounding.
func TestCoarseStepMatchesL2(t *testing.T) {
	const d = 16
	for _, scale := range []float32{1, 1e-6, 1e6} {
		for _, nlist := range []int{1, 7, 8, 13, 64} {
			data := clustered(4000, d, 20, int64(nlist))
			for i := range data {
				data[i] *= scale
			}
			ix, err := Train(Params{Dim: d, NList: nlist, M: 4, Bits: 8}, data, 1, 1)
			if err != nil {
				t.Fatal(err)
			}
			s := ix.getScratch()
			want := make([]float32, nlist)
			for qi := 0; qi < 20; qi++ {
				q := data[qi*d : (qi+1)*d]
				nprobe := max(1, nlist/3)
				ix.mu.RLock()
				ix.prepareLocked(q, nprobe, s)
				ix.mu.RUnlock()
				simd.L2SqBatch(q, ix.coarse, want)
				qq := simd.Dot(q, q)
				probed := map[int]bool{}
				far, tol := float32(0), float32(0)
				for _, l := range s.probeOrder {
					probed[l] = true
					far = max(far, want[l])
					if got := s.coarseDist[l]; got != simd.L2Sq(q, ix.coarse[l*d:(l+1)*d]) {
						t.Fatalf("scale %g nlist %d query %d: probed list %d: distance %g, not the exact %g", scale, nlist, qi, l, got, want[l])
					}
				}
				if !slices.IsSortedFunc(s.probeOrder, func(a, b int) int { return cmp.Compare(s.coarseDist[a], s.coarseDist[b]) }) {
					t.Fatalf("scale %g nlist %d query %d: probes not nearest first: %v", scale, nlist, qi, s.probeOrder)
				}
				for l, w := range want {
					lt := 0x1p-9 * (qq + ix.coarseNorm[l])
					tol = max(tol, lt)
					if diff := math.Abs(float64(s.coarseDist[l] - w)); diff > float64(lt) {
						t.Fatalf("scale %g nlist %d query %d list %d: coarse distance %g, L2 %g", scale, nlist, qi, l, s.coarseDist[l], w)
					}
				}
				// Every probed list is at least as near as every list left
				// out, up to the rounding of both distances.
				for l, w := range want {
					if !probed[l] && w < far-2*tol {
						t.Fatalf("scale %g nlist %d query %d: list %d (%g) left out, list at %g probed", scale, nlist, qi, l, w, far)
					}
				}
			}
			ix.scratch.Put(s)
		}
	}
}
