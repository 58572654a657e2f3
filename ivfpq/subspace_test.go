package ivfpq

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cespare/xxhash/v2"

	"github.com/memrl/memrl/vfs"
)

// TestSubspaceWidths pins the rule of params.go: the first Dim mod M
// sub-spaces have ⌈Dim/M⌉ dimensions, the others ⌊Dim/M⌋, in order,
// covering every dimension once.
func TestSubspaceWidths(t *testing.T) {
	cases := []struct {
		dim, m int
		widths []int
	}{
		{13, 5, []int{3, 3, 3, 2, 2}},
		{16, 4, []int{4, 4, 4, 4}},
		{7, 7, []int{1, 1, 1, 1, 1, 1, 1}},
		{10, 3, []int{4, 3, 3}},
	}
	for _, c := range cases {
		p := Params{Dim: c.dim, NList: 1, M: c.m, Bits: 4}
		if err := p.Validate(); err != nil {
			t.Fatalf("%+v: %v", p, err)
		}
		off := 0
		for s, w := range c.widths {
			if p.subOff(s) != off || p.subDim(s) != w {
				t.Errorf("Dim %d M %d: sub-space %d at %d width %d, want %d width %d", c.dim, c.m, s, p.subOff(s), p.subDim(s), off, w)
			}
			off += w
		}
		if p.subOff(c.m) != c.dim || p.bookLen() != 16*c.dim {
			t.Errorf("Dim %d M %d: subOff(M) %d, bookLen %d", c.dim, c.m, p.subOff(c.m), p.bookLen())
		}
	}
	// SIFT as 48 sub-spaces: 32 of 3 dimensions and 16 of 2, 24-byte codes.
	p := Params{Dim: 128, NList: 1, M: 48, Bits: 4}
	if p.wideSubs() != 32 || p.subDim(31) != 3 || p.subDim(32) != 2 || p.codeSize() != 24 {
		t.Errorf("Dim 128 M 48: %d wide, widths %d %d, code %d bytes", p.wideSubs(), p.subDim(31), p.subDim(32), p.codeSize())
	}
	for _, bad := range []Params{{Dim: 6, NList: 1, M: 7, Bits: 4}, {Dim: 300, NList: 1, M: 257, Bits: 4}} {
		if err := bad.Validate(); !errors.Is(err, ErrBadParams) {
			t.Errorf("%+v: Validate %v, want ErrBadParams", bad, err)
		}
	}
}

// TestEncodeUnequalIsNearestCentroid checks encodePQ and decodePQ on
// sub-spaces of two widths against a plain search of each sub-space's
// codebook, addressed as params.go documents it (sub-space s at float
// ksub·subOff(s), [ksub][subDim(s)]), so a layout error in the two-run
// look-up table or in the reconstruction shows.
func TestEncodeUnequalIsNearestCentroid(t *testing.T) {
	for _, p := range []Params{
		{Dim: 13, NList: 1, M: 5, Bits: 4},
		{Dim: 10, NList: 1, M: 4, Bits: 8},
		{Dim: 9, NList: 1, M: 9, Bits: 4},
	} {
		const n = 3000
		x := clustered(n, p.Dim, 30, 21)
		book, err := trainPQ(x, nil, nil, nil, p, 2, 3, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(book) != p.bookLen() {
			t.Fatalf("%+v: codebooks of %d floats, want %d", p, len(book), p.bookLen())
		}
		ksub := p.ksub()
		code := make([]byte, p.M)
		lut := make([]float32, p.M*ksub)
		rec := make([]float32, p.Dim)
		rng := rand.New(rand.NewSource(4))
		for i := 0; i < 200; i++ {
			v := x[rng.Intn(n)*p.Dim:][:p.Dim]
			encodePQ(p, v, book, code, lut)
			decodePQ(p, code, book, rec)
			off := 0
			for s := 0; s < p.M; s++ {
				w := p.subDim(s)
				cb := book[ksub*off : ksub*(off+w)]
				best, bestD := 0, math.Inf(1)
				for c := 0; c < ksub; c++ {
					var d float64
					for j := 0; j < w; j++ {
						e := float64(v[off+j] - cb[c*w+j])
						d += e * e
					}
					if d < bestD {
						best, bestD = c, d
					}
				}
				// A tie could pick either; compare distances, not codes.
				var got float64
				for j := 0; j < w; j++ {
					e := float64(v[off+j] - cb[int(code[s])*w+j])
					got += e * e
				}
				if got > bestD*(1+1e-5)+1e-6 {
					t.Fatalf("%+v: vector %d sub-space %d: code %d at %g, nearest %d at %g", p, i, s, code[s], got, best, bestD)
				}
				if !slices.Equal(rec[off:off+w], cb[int(code[s])*w:(int(code[s])+1)*w]) {
					t.Fatalf("%+v: sub-space %d: reconstruction %v is not centroid %d", p, s, rec[off:off+w], code[s])
				}
				off += w
			}
		}
	}
}

// TestUnequalSubspacesScoreAsReconstruction: with sub-spaces of unequal
// widths, every vector's approximate score (all lists probed, every vector
// kept, no re-rank) matches the float distance (or inner product) to its
// reconstruction c + r̂, exactly for 8-bit codes up to float rounding and
// up to byte quantization for 4-bit codes; after a save and reopen.
func TestUnequalSubspacesScoreAsReconstruction(t *testing.T) {
	for _, p := range []Params{
		{Dim: 13, NList: 8, M: 5, Bits: 4, Metric: L2},
		{Dim: 13, NList: 8, M: 5, Bits: 4, Metric: IP},
		{Dim: 20, NList: 8, M: 8, Bits: 4, Metric: L2},
		{Dim: 10, NList: 8, M: 4, Bits: 8, Metric: L2},
		{Dim: 10, NList: 8, M: 4, Bits: 8, Metric: IP},
	} {
		const n = 1000
		d, m := p.Dim, p.M
		base := clustered(n, d, 20, 17)
		ix := buildIndex(t, p, base, n)
		dir := t.TempDir()
		if err := ix.Save(vfs.Default, dir); err != nil {
			t.Fatal(err)
		}
		ix2, err := Open(vfs.Default, dir)
		if err != nil {
			t.Fatal(err)
		}
		want := make(map[uint32]float64) // Sim: −‖q−c−r̂‖² or ⟨q, c+r̂⟩
		code := make([]byte, m)
		rec := make([]float32, d)
		q := base[5*d : 6*d]
		var maxAbs float64
		for l := range ix2.lists {
			seg := ix2.lists[l].base
			for i, row := range seg.ids {
				if p.Bits == 4 {
					getCode4(seg.codes, i, m, code)
				} else {
					copy(code, seg.codes[i*m:(i+1)*m])
				}
				decodePQ(ix2.p, code, ix2.book, rec)
				var sim float64
				for j := range q {
					x := float64(ix2.coarse[l*d+j] + rec[j])
					if p.Metric == IP {
						sim += float64(q[j]) * x
					} else {
						sim -= (float64(q[j]) - x) * (float64(q[j]) - x)
					}
				}
				want[row] = sim
				maxAbs = max(maxAbs, math.Abs(sim))
			}
		}
		if len(want) != n {
			t.Fatalf("%+v: lists hold %d rows", p, len(want))
		}
		got, err := ix2.Search(q, n, SearchParams{NProbe: p.NList, Refine: 1}, nil, nil)
		if err != nil || len(got) != n {
			t.Fatalf("%+v: search: %d results, %v", p, len(got), err)
		}
		tol := 1e-4 * maxAbs
		if p.Bits == 4 {
			tol = 0.02 * maxAbs
		}
		for _, g := range got {
			if diff := float64(g.Sim) - want[g.Row]; math.Abs(diff) > tol {
				t.Fatalf("%+v: row %d: approximate sim %g, reconstruction's %g", p, g.Row, g.Sim, want[g.Row])
			}
		}
		ix2.Close()
	}
}

// TestUnequalSubspacesExactResults: an index with sub-spaces of unequal
// widths, searched over every list with a re-rank of every row, returns
// exactly the brute-force top k; at a realistic setting its recall is at
// least that of fewer equal sub-spaces. On L2 and IP, 4-bit and 8-bit codes.
func TestUnequalSubspacesExactResults(t *testing.T) {
	const n, nq, k = 4000, 30, 10
	for _, p := range []Params{
		{Dim: 24, NList: 16, M: 10, Bits: 4, Metric: L2},
		{Dim: 24, NList: 16, M: 10, Bits: 8, Metric: IP},
	} {
		d := p.Dim
		all := clustered(n+nq, d, 40, 29)
		base, queries := all[:n*d], all[n*d:]
		ix := buildIndex(t, p, base, n)
		src := sliceSource{base, d}
		for qi := 0; qi < nq; qi++ {
			q := queries[qi*d : (qi+1)*d]
			got, err := ix.Search(q, k, SearchParams{NProbe: p.NList, Refine: n / k, NoPrune: true}, nil, src)
			if err != nil {
				t.Fatal(err)
			}
			truth := bruteForce(base, d, q, k, p.Metric, nil)
			rows := make([]uint32, len(got))
			for i, g := range got {
				rows[i] = g.Row
			}
			if !slices.Equal(rows, truth) {
				t.Fatalf("%+v: query %d: got %v, exact %v", p, qi, rows, truth)
			}
		}
		// Ten sub-spaces of 3 and 2 dimensions quantize better than eight
		// of 3: at the same setting recall must not fall below M 8's
		// (on this data, 4-bit: 0.583 against 0.507; 8-bit: 0.977 against 0.953).
		fewer := p
		fewer.M = 8
		sp := SearchParams{NProbe: 4, Refine: 4}
		r, r8 := recallAt(t, ix, base, queries, d, k, sp), recallAt(t, buildIndex(t, fewer, base, n), base, queries, d, k, sp)
		if r < r8 {
			t.Errorf("%+v: recall@%d at nprobe 4 refine 4: %.3f, below M 8's %.3f", p, k, r, r8)
		}
	}
}

// TestUnequalFileVersion: an index without L2 terms (IP over vectors not
// of unit norm) whose M does not divide Dim is saved as format version 3
// and reopens to the same results; an equal-width one is still saved as
// version 2 (indexes with terms are saved as version 4 either way:
// file16_test.go). Version 3 on an equal-width header, version 2 or 1 on
// an unequal one, version 4 on one without terms (all with valid
// checksums), a flipped codebook byte and a changed M are refused as
// ErrCorrupt; a version past 4 as ErrVersion.
func TestUnequalFileVersion(t *testing.T) {
	const n, d = 2000, 13
	base := clustered(n, d, 20, 3)
	p := Params{Dim: d, NList: 8, M: 5, Bits: 4, Metric: IP}
	ix := buildIndex(t, p, base, n)
	dir := t.TempDir()
	if err := ix.Save(vfs.Default, dir); err != nil {
		t.Fatal(err)
	}
	want := searchAll(t, ix, base, d)
	path := filepath.Join(dir, FileName)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if v := binary.LittleEndian.Uint32(good[8:]); v != fileVersionUnequal {
		t.Fatalf("unequal index saved as version %d, want %d", v, fileVersionUnequal)
	}
	ix2, err := Open(vfs.Default, dir)
	if err != nil {
		t.Fatal(err)
	}
	if ix2.Params() != p {
		t.Fatalf("reopened params %+v, want %+v", ix2.Params(), p)
	}
	if got := searchAll(t, ix2, base, d); !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatal("results differ after reopen")
	}
	if err := ix2.Verify(); err != nil {
		t.Fatal(err)
	}
	ix2.Close()

	// The equal-width file of the same data keeps version 2.
	eq := buildIndex(t, Params{Dim: d, NList: 8, M: 13, Bits: 4, Metric: IP}, base, n)
	eqDir := t.TempDir()
	if err := eq.Save(vfs.Default, eqDir); err != nil {
		t.Fatal(err)
	}
	eqGood, err := os.ReadFile(filepath.Join(eqDir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if v := binary.LittleEndian.Uint32(eqGood[8:]); v != fileVersion {
		t.Fatalf("equal-width index saved as version %d, want %d", v, fileVersion)
	}

	h, err := decodeHeader(good, uint64(len(good)))
	if err != nil {
		t.Fatal(err)
	}
	resum := func(b []byte) []byte {
		binary.LittleEndian.PutUint64(b[headerSumOff:], xxhash.Sum64(b[:headerSumOff]))
		return b
	}
	withVersion := func(b []byte, v uint32) []byte {
		b = slices.Clone(b)
		binary.LittleEndian.PutUint32(b[8:], v)
		return resum(b)
	}
	flipBook := slices.Clone(good)
	flipBook[h.metaOff+4*uint64(p.NList*d)+7] ^= 0x10 // inside the codebooks
	flipM := slices.Clone(good)
	binary.LittleEndian.PutUint32(flipM[24:], 4) // M 4, checksum not redone
	cases := []struct {
		name string
		file []byte
		want error
	}{
		{"unequal as version 2", withVersion(good, fileVersion), ErrCorrupt},
		{"unequal as version 1", withVersion(good, fileVersionV1), ErrCorrupt},
		{"equal as version 3", withVersion(eqGood, fileVersionUnequal), ErrCorrupt},
		{"codebook byte", flipBook, ErrCorrupt},
		{"M", flipM, ErrCorrupt},
		{"without terms as version 4", withVersion(good, fileVersionTerms16), ErrCorrupt},
		{"equal without terms as version 4", withVersion(eqGood, fileVersionTerms16), ErrCorrupt},
		{"version 5", withVersion(good, fileVersionTerms16+1), ErrVersion},
	}
	for _, c := range cases {
		if err := os.WriteFile(path, c.file, 0o644); err != nil {
			t.Fatal(err)
		}
		ix3, err := Open(vfs.Default, dir)
		if err == nil {
			ix3.Close()
			t.Errorf("%s: Open succeeded", c.name)
			continue
		}
		if !errors.Is(err, c.want) {
			t.Errorf("%s: Open error %v, want %v", c.name, err, c.want)
		}
	}
}
