package ivfpq

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cespare/xxhash/v2"

	"github.com/memrl/memrl/simd"
	"github.com/memrl/memrl/vfs"
)

// saveOpen saves ix to a fresh directory (with 16-bit terms unless
// legacy) and opens it; it returns the index, the file's bytes and the
// directory.
func saveOpen(t *testing.T, ix *Index, legacy bool) (*Index, []byte, string) {
	t.Helper()
	dir := t.TempDir()
	if err := ix.save(vfs.Default, dir, !legacy); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	ix2, err := Open(vfs.Default, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix2.Close() })
	return ix2, b, dir
}

// termOf returns row's list and L2 term in ix (dequantized), found by a
// walk of every list.
func termOf(ix *Index) map[uint32]struct {
	list int
	term float32
} {
	out := map[uint32]struct {
		list int
		term float32
	}{}
	for l := range ix.lists {
		for _, seg := range []*segment{&ix.lists[l].base, &ix.lists[l].tail} {
			for i, row := range seg.ids {
				out[row] = struct {
					list int
					term float32
				}{l, seg.term(i)}
			}
		}
	}
	return out
}

// near16 reports whether a (a score or term read through a 16-bit grid
// of step) is within half a step of b, plus float32 rounding of values of
// magnitude mag.
func near16(a, b, step, mag float32) bool {
	tol := float64(step)/2*(1+1e-6) + 8*float64(mag)/(1<<23)
	return math.Abs(float64(a)-float64(b)) <= tol
}

// gridMag is the largest magnitude a term on g reaches.
func gridMag(g termGrid) float32 {
	return max(float32(math.Abs(float64(g.base))), float32(math.Abs(float64(g.value(termMax)))))
}

// TestTerms16SaveOpen: an L2 index (4- and 8-bit codes, sub-spaces of
// equal and unequal widths) is saved as format version 4, 2 bytes a
// vector smaller than with float32 terms; every stored term is within
// half its list's step of the float32 term it replaces; every approximate
// score (no re-rank) of a search of every list, at every kernel level, is
// within half a step (and float rounding) of the in-memory index's; and
// recall@10 against brute force with exact re-rank is unchanged to 1%.
func TestTerms16SaveOpen(t *testing.T) {
	const n, d, nq = 6000, 32, 60
	base := clustered(n, d, 40, 11)
	queries := clustered(nq, d, 40, 11) // the same centres, new points
	for _, c := range []struct {
		p     Params
		check bool // compare approximate scores per row
	}{
		{Params{Dim: d, NList: 32, M: 16, Bits: 4}, true},
		{Params{Dim: d, NList: 32, M: 8, Bits: 8}, true},
		{Params{Dim: d, NList: 16, M: 12, Bits: 4}, false}, // widths 3 and 2
	} {
		t.Run(fmt.Sprintf("M%dx%d", c.p.M, c.p.Bits), func(t *testing.T) {
			ix := buildIndex(t, c.p, base, n)
			ix2, file, _ := saveOpen(t, ix, false)
			_, legacy, _ := saveOpen(t, ix, true)
			if v := binary.LittleEndian.Uint32(file[8:]); v != fileVersionTerms16 {
				t.Fatalf("saved as version %d, want %d", v, fileVersionTerms16)
			}
			lv := uint32(fileVersion)
			if c.p.wideSubs() != 0 {
				lv = fileVersionUnequal
			}
			if v := binary.LittleEndian.Uint32(legacy[8:]); v != lv {
				t.Fatalf("legacy layout saved as version %d, want %d", v, lv)
			}
			// Each list's terms shrink from pad8(4n) to pad8(2n) bytes.
			var saved int
			for l := range ix.lists {
				k := len(ix.lists[l].tail.ids)
				saved += int(pad8(uint64(4*k)) - pad8(uint64(2*k)))
			}
			if len(legacy)-len(file) != saved {
				t.Fatalf("file %d bytes, %d with float32 terms: %d saved, want %d", len(file), len(legacy), len(legacy)-len(file), saved)
			}
			if got, want := ix2.Bytes(), ix.Bytes()-2*n; got != want {
				t.Fatalf("Bytes after reopen %d, want %d", got, want)
			}
			if err := ix2.Verify(); err != nil {
				t.Fatal(err)
			}

			mem, opened := termOf(ix), termOf(ix2)
			for row, m := range mem {
				o := opened[row]
				g := ix2.lists[o.list].base.grid
				if o.list != m.list || !near16(o.term, m.term, g.step, gridMag(g)) {
					t.Fatalf("row %d: list %d term %g, in memory list %d term %g (step %g)", row, o.list, o.term, m.list, m.term, g.step)
				}
			}

			if c.check {
				start := simd.Level()
				defer simd.SetLevel(start)
				for _, level := range simd.Levels() {
					if err := simd.SetLevel(level); err != nil {
						t.Fatal(err)
					}
					for qi := 0; qi < 5; qi++ {
						q := queries[qi*d : (qi+1)*d]
						sp := SearchParams{NProbe: c.p.NList, Refine: 1, NoPrune: true}
						a, err := ix.Search(q, n, sp, nil, nil)
						if err != nil {
							t.Fatal(err)
						}
						b, err := ix2.Search(q, n, sp, nil, nil)
						if err != nil {
							t.Fatal(err)
						}
						if len(a) != n || len(b) != n {
							t.Fatalf("%s: %d and %d results, want %d", level, len(a), len(b), n)
						}
						score := map[uint32]float32{}
						for _, x := range a {
							score[x.Row] = x.Sim
						}
						for _, x := range b {
							g := ix2.lists[opened[x.Row].list].base.grid
							want := score[x.Row]
							mag := gridMag(g) + float32(math.Abs(float64(want)))
							if !near16(x.Sim, want, g.step, 4*mag) {
								t.Fatalf("%s q%d row %d: approximate score %g, in memory %g (step %g)", level, qi, x.Row, x.Sim, want, g.step)
							}
						}
					}
				}
			}

			sp := SearchParams{NProbe: 4, Refine: 4}
			r1 := recallAt(t, ix, base, queries, d, 10, sp)
			r2 := recallAt(t, ix2, base, queries, d, 10, sp)
			t.Logf("recall@10: in memory %.4f, version 4 file %.4f", r1, r2)
			if r2 < r1-0.01 {
				t.Fatalf("recall@10 %.4f after save and open, %.4f before", r2, r1)
			}
		})
	}
}

// TestTerms16AppendAndSaveAgain: vectors added to an opened version 4
// index (tails with float32 terms behind 16-bit base segments) are saved
// with the base. When every new term lies in its list's grid the grid is
// kept and the stored base terms are copied unchanged; when some do not
// (far-away vectors), the list is regridded and every term stays within
// half of the old step plus half of the new one of its float32 value.
// Saving an opened index again without changes writes the same bytes, so
// repeated checkpoints do not drift.
func TestTerms16AppendAndSaveAgain(t *testing.T) {
	const n, more, d = 3000, 600, 16
	all := clustered(n+more, d, 20, 5)
	for _, bits := range []int{4, 8} {
		t.Run(fmt.Sprintf("bits%d", bits), func(t *testing.T) {
			p := Params{Dim: d, NList: 8, M: 8, Bits: bits}
			ix := buildIndex(t, p, all[:n*d], n)
			ix2, file2, dir := saveOpen(t, ix, false)
			// Unchanged: the same bytes again.
			again := t.TempDir()
			if err := ix2.Save(vfs.Default, again); err != nil {
				t.Fatal(err)
			}
			if b, err := os.ReadFile(filepath.Join(again, FileName)); err != nil || !bytes.Equal(b, file2) {
				t.Fatalf("saving an opened index unchanged wrote different bytes (%v)", err)
			}

			// Near vectors (from the same clusters), then a few far ones:
			// scaled up, their terms leave their lists' grids.
			extra := slices.Clone(all[n*d:])
			for i := more - 5; i < more; i++ {
				for j := range d {
					extra[i*d+j] *= 8
				}
			}
			for i := range more {
				for _, x := range []*Index{ix, ix2} {
					if err := x.Add(uint32(n+i), extra[i*d:(i+1)*d]); err != nil {
						t.Fatal(err)
					}
				}
			}
			before := termOf(ix2) // base dequantized, tails float32
			grids := make([]termGrid, p.NList)
			for l := range grids {
				grids[l] = ix2.lists[l].base.grid
			}
			if err := ix2.Save(vfs.Default, dir); err != nil { // replaces the file ix2 maps
				t.Fatal(err)
			}
			ix3, err := Open(vfs.Default, dir)
			if err != nil {
				t.Fatal(err)
			}
			defer ix3.Close()
			if ix3.Rows() != n+more {
				t.Fatalf("rows %d, want %d", ix3.Rows(), n+more)
			}
			if err := ix3.Verify(); err != nil {
				t.Fatal(err)
			}
			mem := termOf(ix)
			after := termOf(ix3)
			var kept, regridded int
			for l := range ix3.lists {
				g := ix3.lists[l].base.grid
				if g == grids[l] {
					kept++
				} else {
					regridded++
				}
				for i, row := range ix3.lists[l].base.ids {
					got := ix3.lists[l].base.term(i)
					if g == grids[l] && row < n && got != before[row].term {
						t.Fatalf("list %d kept its grid but row %d's term moved: %g, was %g", l, row, got, before[row].term)
					}
					tol := g.step
					if g != grids[l] && row < n {
						tol += grids[l].step // requantized: both halves
					}
					if !near16(got, mem[row].term, tol, 2*max(gridMag(g), gridMag(grids[l]))) {
						t.Fatalf("list %d row %d: term %g, float32 %g (step %g, was %g)", l, row, got, mem[row].term, g.step, grids[l].step)
					}
				}
			}
			if kept == 0 || regridded == 0 {
				t.Fatalf("%d lists kept their grid and %d were regridded; the test wants both", kept, regridded)
			}
			if len(after) != n+more {
				t.Fatalf("%d rows after the second save", len(after))
			}
			// Results with exact re-rank stay as good as the in-memory index's.
			queries := clustered(40, d, 20, 5)
			sp := SearchParams{NProbe: 3, Refine: 4}
			r1 := recallAt(t, ix, append(all[:n*d:n*d], extra...), queries, d, 10, sp)
			r3 := recallAt(t, ix3, append(all[:n*d:n*d], extra...), queries, d, 10, sp)
			t.Logf("recall@10: in memory %.4f, saved twice %.4f", r1, r3)
			if r3 < r1-0.02 {
				t.Fatalf("recall@10 %.4f after two saves, %.4f in memory", r3, r1)
			}
		})
	}
}

// TestLegacyTermFilesOpen: files of versions 2 and 3 with float32 terms
// (as builds before version 4 wrote them) still open, answer exactly as
// the index saved (same terms, same scores), take appends, and are saved
// again as version 4.
func TestLegacyTermFilesOpen(t *testing.T) {
	const n, d = 2000, 15
	base := clustered(n+300, d, 20, 9)
	for _, p := range []Params{
		{Dim: d, NList: 8, M: 5, Bits: 4}, // widths equal: version 2
		{Dim: d, NList: 8, M: 4, Bits: 8}, // widths 4 and 3: version 3
	} {
		ix := buildIndex(t, p, base[:n*d], n)
		old, file, dir := saveOpen(t, ix, true)
		if v := binary.LittleEndian.Uint32(file[8:]); v != fileVersionFor(p, false) || v == fileVersionTerms16 {
			t.Fatalf("legacy layout written as version %d", v)
		}
		if old.lists[0].base.terms == nil || old.lists[0].base.terms16 != nil {
			t.Fatal("a version 2/3 file did not open with float32 terms")
		}
		want := searchAll(t, ix, base, d)
		if got := searchAll(t, old, base, d); !slices.EqualFunc(got, want, slices.Equal) {
			t.Fatalf("%+v: version %d file answers differently", p, binary.LittleEndian.Uint32(file[8:]))
		}
		for i := n; i < n+300; i++ {
			if err := old.Add(uint32(i), base[i*d:(i+1)*d]); err != nil {
				t.Fatal(err)
			}
		}
		if err := old.Save(vfs.Default, dir); err != nil {
			t.Fatal(err)
		}
		ix2, err := Open(vfs.Default, dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := ix2.Verify(); err != nil || ix2.Rows() != n+300 {
			t.Fatalf("resaved: rows %d, Verify %v", ix2.Rows(), err)
		}
		if ix2.lists[0].base.terms16 == nil {
			t.Fatal("resaved file has no 16-bit terms")
		}
		ix2.Close()
	}
}

// TestNoTermsFilesUnchanged: an index without L2 terms (IP over vectors
// not of unit norm) is saved as version 2 (or 3), byte for byte as
// before version 4 existed, and its directory's [24, 32) stay zero.
func TestNoTermsFilesUnchanged(t *testing.T) {
	const n, d = 1500, 12
	base := clustered(n, d, 20, 4)
	for _, p := range []Params{
		{Dim: d, NList: 8, M: 6, Bits: 4, Metric: IP},
		{Dim: d, NList: 8, M: 5, Bits: 8, Metric: IP},
	} {
		ix := buildIndex(t, p, base, n)
		if ix.p.hasTerms() {
			t.Fatal("test index has terms")
		}
		_, file, _ := saveOpen(t, ix, false)
		_, legacy, _ := saveOpen(t, ix, true)
		if !bytes.Equal(file, legacy) {
			t.Fatalf("%+v: Save differs from the version 2/3 writer", p)
		}
		if v := binary.LittleEndian.Uint32(file[8:]); v != fileVersionFor(p, false) || v == fileVersionTerms16 {
			t.Fatalf("%+v: saved as version %d", p, v)
		}
	}
}

// TestTerms16CorruptionRefused damages the 16-bit terms and their grids of
// a version 4 file: a grid with a NaN or negative step, or an infinite
// base (directory checksum redone) is refused by Open; a flipped term byte
// fails its list's checksum (Verify, Search, Save); non-zero reserved
// directory bytes [12, 16) are refused. All wrap ErrCorrupt.
func TestTerms16CorruptionRefused(t *testing.T) {
	const n, d = 2000, 16
	base := clustered(n, d, 20, 3)
	for _, bits := range []int{4, 8} {
		ix := buildIndex(t, Params{Dim: d, NList: 8, M: 4, Bits: bits}, base, n)
		_, good, dir := saveOpen(t, ix, false)
		path := filepath.Join(dir, FileName)
		h, err := decodeHeader(good, uint64(len(good)))
		if err != nil {
			t.Fatal(err)
		}
		le := binary.LittleEndian
		// withEntry returns good with list 1's directory entry changed by
		// f and the directory and header checksums redone.
		withEntry := func(f func(e []byte)) []byte {
			b := slices.Clone(good)
			f(b[h.dirOff+dirEntrySize:])
			le.PutUint64(b[88:], xxhash.Sum64(b[h.dirOff:h.dataOff]))
			le.PutUint64(b[headerSumOff:], xxhash.Sum64(b[:headerSumOff]))
			return b
		}
		nan := math.Float32bits(float32(math.NaN()))
		cases := map[string][]byte{
			"NaN step":      withEntry(func(e []byte) { le.PutUint32(e[28:], nan) }),
			"negative step": withEntry(func(e []byte) { le.PutUint32(e[28:], math.Float32bits(-0.5)) }),
			"infinite step": withEntry(func(e []byte) { le.PutUint32(e[28:], math.Float32bits(float32(math.Inf(1)))) }),
			"NaN base":      withEntry(func(e []byte) { le.PutUint32(e[24:], nan) }),
			"infinite base": withEntry(func(e []byte) { le.PutUint32(e[24:], math.Float32bits(float32(math.Inf(-1)))) }),
			"reserved":      withEntry(func(e []byte) { e[13] = 1 }),
			"step, directory checksum not redone": func() []byte {
				b := slices.Clone(good)
				b[h.dirOff+dirEntrySize+29] ^= 0x01
				return b
			}(),
		}
		for name, b := range cases {
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			ix2, err := Open(vfs.Default, dir)
			if err == nil {
				ix2.Close()
				t.Errorf("bits %d %s: Open succeeded", bits, name)
			} else if !errors.Is(err, ErrCorrupt) {
				t.Errorf("bits %d %s: %v, want ErrCorrupt", bits, name, err)
			}
		}

		// A flipped byte of list 1's 16-bit terms: Open succeeds (lists are
		// checked lazily), the list's checksum then refuses it.
		e, _ := getDirEntry(good[h.dirOff+dirEntrySize:], true)
		if e.n == 0 {
			t.Fatal("list 1 is empty")
		}
		codesLen := uint64(codesLenFor(h.p, int(e.n)))
		termOff := h.dataOff + e.off + pad8(4*uint64(e.n)) + pad8(codesLen)
		b := slices.Clone(good)
		b[termOff+1] ^= 0x20
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		ix2, err := Open(vfs.Default, dir)
		if err != nil {
			t.Fatalf("bits %d: Open with a damaged term: %v", bits, err)
		}
		if err := ix2.Verify(); !errors.Is(err, ErrCorrupt) {
			t.Errorf("bits %d: Verify with a damaged term: %v, want ErrCorrupt", bits, err)
		}
		if _, err := ix2.Search(base[:d], 5, SearchParams{NProbe: 8}, nil, nil); !errors.Is(err, ErrCorrupt) {
			t.Errorf("bits %d: search with a damaged term: %v, want ErrCorrupt", bits, err)
		}
		if err := ix2.Save(vfs.Default, t.TempDir()); !errors.Is(err, ErrCorrupt) {
			t.Errorf("bits %d: Save with a damaged term: %v, want ErrCorrupt", bits, err)
		}
		ix2.Close()
	}
}

// TestSaveRefusesNonFiniteTerms: a list whose terms are not finite cannot
// be stored in 16 bits; Save fails with ErrTermRange and leaves the file
// it would have replaced.
func TestSaveRefusesNonFiniteTerms(t *testing.T) {
	const n, d = 1000, 8
	base := clustered(n, d, 10, 2)
	ix := buildIndex(t, Params{Dim: d, NList: 4, M: 4, Bits: 4}, base, n)
	_, good, dir := saveOpen(t, ix, false)
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1))} {
		for l := range ix.lists {
			if len(ix.lists[l].tail.terms) > 0 {
				ix.lists[l].tail.terms[0] = bad
				break
			}
		}
		if err := ix.Save(vfs.Default, dir); !errors.Is(err, ErrTermRange) {
			t.Fatalf("Save with a term %v: %v, want ErrTermRange", bad, err)
		}
		if b, err := os.ReadFile(filepath.Join(dir, FileName)); err != nil || !bytes.Equal(b, good) {
			t.Fatalf("a refused Save changed the file (%v)", err)
		}
	}
}

// TestTermGrid: the grid of a list's terms and its edge cases.
func TestTermGrid(t *testing.T) {
	g, err := newTermGrid([]float32{-3, 5, 1.25, 7, 0})
	if err != nil {
		t.Fatal(err)
	}
	if g.base != -3 || g.step != float32(float64(10)/65535) {
		t.Fatalf("grid %+v, want base -3 step 10/65535", g)
	}
	for _, x := range []float32{-3, 5, 1.25, 7, 0} {
		if v := g.value(g.quantize(x)); !near16(v, x, g.step, 7) {
			t.Errorf("%g stored as %g (step %g)", x, v, g.step)
		}
	}
	if g.quantize(-3) != 0 || g.quantize(7) != termMax || g.value(0) != -3 {
		t.Errorf("ends: %d %d %g", g.quantize(-3), g.quantize(7), g.value(0))
	}
	if g.quantize(-100) != 0 || g.quantize(100) != termMax || g.covers(-3.5) || g.covers(7.01) || !g.covers(7) {
		t.Errorf("outside the span: clamp %d %d, covers %v %v %v", g.quantize(-100), g.quantize(100), g.covers(-3.5), g.covers(7.01), g.covers(7))
	}
	// All equal: step 0, every t 0, exact.
	g, err = newTermGrid([]float32{2.5, 2.5})
	if err != nil || g.step != 0 || g.quantize(2.5) != 0 || g.value(0) != 2.5 {
		t.Errorf("equal terms: %+v %v", g, err)
	}
	if g, err := newTermGrid(nil); err != nil || g != (termGrid{}) {
		t.Errorf("no terms: %+v %v", g, err)
	}
	for _, bad := range [][]float32{
		{1, float32(math.NaN())},
		{float32(math.Inf(-1)), 1},
		{-3e38, 3e38}, // span overflows float32
	} {
		if _, err := newTermGrid(bad); !errors.Is(err, ErrTermRange) {
			t.Errorf("%v: %v, want ErrTermRange", bad, err)
		}
	}
	if _, err := newTermGrid([]float32{-1e38, 1e38}); err != nil {
		t.Errorf("a span of 2e38: %v", err)
	}
	for _, g := range []termGrid{{0, -1}, {float32(math.NaN()), 1}, {0, float32(math.Inf(1))}} {
		if g.valid() {
			t.Errorf("grid %+v valid", g)
		}
	}
}
