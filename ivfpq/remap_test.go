package ivfpq

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
)

// TestRemapAnswersAsTheOriginal drops every third row and moves the rest
// down (as compaction does), then checks that the remapped index answers
// every query exactly as the original does with the dropped rows deleted,
// renumbered; for 8- and 4-bit codes, L2 (with terms) and IP.
func TestRemapAnswersAsTheOriginal(t *testing.T) {
	const d, n = 32, 3000
	base := clustered(n, d, 20, 7)
	queries := clustered(50, d, 20, 8)
	for _, p := range []Params{
		{Dim: d, NList: 32, M: 8, Bits: 8, Metric: L2},
		{Dim: d, NList: 32, M: 8, Bits: 4, Metric: L2},
		{Dim: d, NList: 32, M: 8, Bits: 8, Metric: IP},
	} {
		ix := buildIndex(t, p, base, n)
		dropped := roaring.New()
		newRow := make([]int64, n)
		var kept []float32
		next := uint32(0)
		for r := 0; r < n; r++ {
			if r%3 == 0 {
				dropped.Add(uint32(r))
				newRow[r] = -1
				continue
			}
			newRow[r] = int64(next)
			next++
			kept = append(kept, base[r*d:(r+1)*d]...)
		}
		out, err := ix.Remap(func(old uint32) (uint32, bool) {
			return uint32(newRow[old]), newRow[old] >= 0
		}, next)
		if err != nil {
			t.Fatal(err)
		}
		if out.Rows() != next {
			t.Fatalf("rows %d, want %d", out.Rows(), next)
		}
		sp := SearchParams{NProbe: 8, Refine: 8}
		for i := 0; i < 50; i++ {
			q := queries[i*d : (i+1)*d]
			want, err := ix.Search(q, 10, sp, dropped, sliceSource{base, d})
			if err != nil {
				t.Fatal(err)
			}
			got, err := out.Search(q, 10, sp, nil, sliceSource{kept, d})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%+v query %d: %d results, want %d", p, i, len(got), len(want))
			}
			for j := range got {
				if int64(got[j].Row) != newRow[want[j].Row] || got[j].Sim != want[j].Sim {
					t.Fatalf("%+v query %d result %d: %+v, want row %d (old %+v)", p, i, j, got[j], newRow[want[j].Row], want[j])
				}
			}
		}
		ix.Close()
		out.Close()
	}
}

// TestRemapRefusesABadMap checks that a map that does not cover [0, rows)
// one to one is refused.
func TestRemapRefusesABadMap(t *testing.T) {
	const d, n = 16, 600
	base := clustered(n, d, 4, 3)
	ix := buildIndex(t, Params{Dim: d, NList: 8, M: 4, Bits: 8, Metric: L2}, base, n)
	defer ix.Close()
	for name, tc := range map[string]struct {
		f    func(uint32) (uint32, bool)
		rows uint32
	}{
		"twice":    {func(r uint32) (uint32, bool) { return r / 2, true }, n},
		"past":     {func(r uint32) (uint32, bool) { return r + 1, true }, n},
		"gap":      {func(r uint32) (uint32, bool) { return r, r != 5 }, n},
		"identity": {func(r uint32) (uint32, bool) { return r, true }, n},
	} {
		out, err := ix.Remap(tc.f, tc.rows)
		if name == "identity" {
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			out.Close()
			continue
		}
		if !errors.Is(err, ErrBadParams) {
			t.Fatalf("%s: err %v, want ErrBadParams", name, err)
		}
	}
	if ix.Rows() != n {
		t.Fatal("the original changed")
	}
}

// TestRemapAppend remaps a prefix, then appends the rest of the rows (as
// compaction does for rows added during its remap): the result equals a
// remap of everything at once.
func TestRemapAppend(t *testing.T) {
	const d, n = 16, 1200
	base := clustered(n, d, 8, 5)
	p := Params{Dim: d, NList: 16, M: 4, Bits: 4, Metric: L2}
	ix := buildIndex(t, p, base, n)
	defer ix.Close()
	// Keep odd rows: rows below 800 first, the rest appended.
	keep := func(old uint32) (uint32, bool) { return old / 2, old%2 == 1 }
	out, err := ix.Remap(func(old uint32) (uint32, bool) {
		if old >= 800 {
			return 0, false
		}
		return keep(old)
	}, 400)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if err := ix.RemapAppend(out, func(old uint32) (uint32, bool) {
		if old < 800 {
			return 0, false
		}
		return keep(old)
	}, n/2); err != nil {
		t.Fatal(err)
	}
	whole, err := ix.Remap(keep, n/2)
	if err != nil {
		t.Fatal(err)
	}
	defer whole.Close()
	for l := range whole.lists {
		a, ca := mergedList(&out.lists[l], out.p)
		b, cb := mergedList(&whole.lists[l], whole.p)
		if !slices.Equal(a, b) || !bytes.Equal(ca, cb) || !slices.Equal(mergedTerms(&out.lists[l]), mergedTerms(&whole.lists[l])) {
			t.Fatalf("list %d differs: %v vs %v", l, a, b)
		}
	}
	// A map that misses a row, or one already held, is refused.
	if err := ix.RemapAppend(out, keep, n/2+1); !errors.Is(err, ErrBadParams) {
		t.Fatalf("RemapAppend of held rows: %v", err)
	}
}
