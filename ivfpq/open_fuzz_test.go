package ivfpq

import (
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"unsafe"

	"github.com/cespare/xxhash/v2"

	"github.com/memrl/memrl/fuzz/corpus"
	"github.com/memrl/memrl/vfs"
)

// indexFileSeeds saves small real indexes of each kind the format holds
// (4- and 8-bit codes, L2 with 16-bit terms (version 4) and with float32
// terms as versions 1 to 3 stored them, unit-norm IP, an empty index, a
// training size recorded, sub-spaces of two widths) and returns their
// files: the committed seed corpus of FuzzOpenIndex
// (TestFuzzSeedsIndexFile keeps it current).
func indexFileSeeds(t *testing.T) map[string]corpus.Seed {
	t.Helper()
	// saved returns the bytes of ix's file; with float32 terms as
	// versions before 4 stored them when legacy is set.
	saved := func(ix *Index, legacy bool) []byte {
		dir := t.TempDir()
		if err := ix.save(vfs.Default, dir, !legacy); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, FileName))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	build := func(p Params, n int, unit, legacy bool) []byte {
		base := clustered(n, p.Dim, 4, 7)
		if unit {
			normalize(base, p.Dim)
		}
		ix, err := Train(p, base, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := ix.AddBatch(0, base, 1); err != nil {
			t.Fatal(err)
		}
		return saved(ix, legacy)
	}
	empty := func(p Params) []byte {
		ix, err := Train(p, clustered(64, p.Dim, 4, 1), 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		return saved(ix, false)
	}
	// v1 rewrites a saved file as format version 1 wrote it.
	v1 := func(b []byte) []byte {
		binary.LittleEndian.PutUint32(b[8:], fileVersionV1)
		clear(b[100:headerSumOff])
		binary.LittleEndian.PutUint64(b[headerSumOff:], xxhash.Sum64(b[:headerSumOff]))
		return b
	}
	// trained sets the file's training size, as SetTrainedFor before Save.
	trained := func(b []byte, n uint64) []byte {
		binary.LittleEndian.PutUint64(b[100:], n)
		binary.LittleEndian.PutUint64(b[headerSumOff:], xxhash.Sum64(b[:headerSumOff]))
		return b
	}
	return map[string]corpus.Seed{
		"l2-4bit-v1":    {v1(build(Params{Dim: 4, NList: 3, M: 2, Bits: 4}, 40, false, true)), false},
		"l2-8bit-train": {trained(build(Params{Dim: 2, NList: 2, M: 1, Bits: 8}, 260, false, false), 260), false},
		"l2-4bit":       {build(Params{Dim: 4, NList: 3, M: 2, Bits: 4}, 40, false, false), false},
		"ip-4bit":       {build(Params{Dim: 4, NList: 2, M: 1, Bits: 4, Metric: IP}, 40, true, false), true},
		"l2-8bit":       {build(Params{Dim: 2, NList: 2, M: 1, Bits: 8}, 260, false, false), true},
		"empty":         {empty(Params{Dim: 4, NList: 2, M: 2, Bits: 4}), false},
		"l2-fixed":      {build(Params{Dim: 4, NList: 3, M: 2, Bits: 4}, 40, false, false), true},
		// Sub-spaces of 2, 2 and 1 dimensions: version 4 with terms.
		"l2-4bit-unequal": {build(Params{Dim: 5, NList: 3, M: 3, Bits: 4}, 40, false, false), false},
		"l2-8bit-unequal": {build(Params{Dim: 3, NList: 2, M: 2, Bits: 8}, 260, false, false), true},
		// Float32 terms, as versions 2 and 3 store them.
		"l2-4bit-v2":         {build(Params{Dim: 4, NList: 3, M: 2, Bits: 4}, 40, false, true), true},
		"l2-8bit-v2":         {build(Params{Dim: 2, NList: 2, M: 1, Bits: 8}, 260, false, true), false},
		"l2-4bit-unequal-v3": {build(Params{Dim: 5, NList: 3, M: 3, Bits: 4}, 40, false, true), true},
		// No terms, unequal widths: version 3.
		"ip-4bit-unequal-v3": {build(Params{Dim: 5, NList: 2, M: 3, Bits: 4, Metric: IP}, 40, false, false), false},
	}
}

func TestFuzzSeedsIndexFile(t *testing.T) {
	seeds := indexFileSeeds(t)
	for name, s := range seeds {
		b := s[0].([]byte)
		ix, err := indexFromMapping(alignedCopy(b), uint64(len(b)))
		if err != nil {
			t.Fatalf("seed %s does not open: %v", name, err)
		}
		if err := ix.Verify(); err != nil {
			t.Fatalf("seed %s does not verify: %v", name, err)
		}
	}
	corpus.Check(t, "FuzzOpenIndex", seeds)
}

// alignedCopy copies b to 8-byte-aligned memory, as a mapping is.
func alignedCopy(b []byte) []byte {
	if len(b) == 0 {
		return b
	}
	w := make([]uint64, (len(b)+7)/8)
	out := unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), len(b))
	copy(out, b)
	return out
}

// fixSums rewrites the checksums of the index file in b (in place) to
// match its contents, wherever the header's offsets allow: each list's,
// then the directory's and centroid section's, then the header's. The
// fuzzer then reaches the checks behind the checksums.
func fixSums(b []byte) {
	if len(b) < headerSize {
		return
	}
	le := binary.LittleEndian
	size := uint64(len(b))
	metaOff, metaLen := le.Uint64(b[40:]), le.Uint64(b[48:])
	dirOff, dataOff := le.Uint64(b[56:]), le.Uint64(b[64:])
	p := Params{Dim: int(le.Uint32(b[16:])), NList: int(le.Uint32(b[20:])), M: int(le.Uint32(b[24:])),
		Bits: int(le.Uint32(b[28:])), Metric: Metric(le.Uint32(b[32:]))}
	terms16 := le.Uint32(b[8:]) == fileVersionTerms16
	if p.Validate() == nil && dirOff <= dataOff && dataOff <= size && (dataOff-dirOff)/dirEntrySize == uint64(p.NList) {
		dataLen := size - dataOff
		for l := 0; l < p.NList; l++ {
			e := b[dirOff+uint64(l)*dirEntrySize:]
			off, n := le.Uint64(e[0:]), le.Uint32(e[8:])
			segLen := segLenFor(p, int(n), terms16)
			if off <= dataLen && segLen <= dataLen-off {
				le.PutUint64(e[16:], xxhash.Sum64(b[dataOff+off:dataOff+off+segLen]))
			}
		}
	}
	if dirOff <= dataOff && dataOff <= size {
		le.PutUint64(b[88:], xxhash.Sum64(b[dirOff:dataOff]))
	}
	if metaOff <= size && metaLen <= size-metaOff {
		le.PutUint64(b[80:], xxhash.Sum64(b[metaOff:metaOff+metaLen]))
	}
	le.PutUint64(b[headerSumOff:], xxhash.Sum64(b[:headerSumOff]))
}

// allocatedBytes returns the bytes allocated so far by the process
// (runtime.MemStats.TotalAlloc); the difference of two readings bounds
// what the code between them allocated.
func allocatedBytes() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

// FuzzOpenIndex opens arbitrary bytes as an index file (the mapping Open
// builds the index from) and, if they open, verifies and searches the
// index. With fix set, the checksums are first made to match (fixSums),
// so that the checks behind them are reached. Invariants:
//
//   - no panic; every refusal wraps ErrCorrupt or ErrVersion;
//   - opening allocates at most a constant plus a small multiple of the
//     file size, whatever sizes and counts the file declares;
//   - Verify of an opened index succeeds or wraps ErrCorrupt; a search
//     probing every list then succeeds exactly when Verify did, and
//     returns at most k neighbours, each a row the index holds.
func FuzzOpenIndex(f *testing.F) {
	f.Add([]byte(fileMagic), true)
	f.Fuzz(func(t *testing.T, data []byte, fix bool) {
		b := alignedCopy(data)
		if fix {
			fixSums(b)
		}
		before := allocatedBytes()
		ix, err := indexFromMapping(b, uint64(len(b)))
		if used := allocatedBytes() - before; used > 64<<10+16*uint64(len(b)) {
			t.Fatalf("opening a %d-byte file allocated %d bytes", len(b), used)
		}
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrVersion) {
				t.Fatalf("Open error %v wraps neither ErrCorrupt nor ErrVersion", err)
			}
			return
		}
		defer ix.Close()
		verr := ix.Verify()
		if verr != nil && !errors.Is(verr, ErrCorrupt) {
			t.Fatalf("Verify error %v does not wrap ErrCorrupt", verr)
		}
		p := ix.Params()
		if p.Dim > 1<<16 {
			return // a search would allocate per dimension; opening was the point
		}
		const k = 5
		res, serr := ix.Search(make([]float32, p.Dim), k, SearchParams{NProbe: p.NList}, nil, nil)
		if (serr == nil) != (verr == nil) {
			t.Fatalf("Verify: %v, but a search of every list: %v", verr, serr)
		}
		if serr != nil && !errors.Is(serr, ErrCorrupt) {
			t.Fatalf("Search error %v does not wrap ErrCorrupt", serr)
		}
		if len(res) > k {
			t.Fatalf("search returned %d neighbours, asked for %d", len(res), k)
		}
		for _, nb := range res {
			if nb.Row >= ix.Rows() {
				t.Fatalf("search returned row %d of an index of %d rows", nb.Row, ix.Rows())
			}
		}
		// Given vectors, a search reads around damaged lists (damaged.go).
		res, st, serr := ix.SearchFiltered(make([]float32, p.Dim), k, SearchParams{NProbe: p.NList}, Filter{}, zeroSource(make([]float32, p.Dim)))
		if serr != nil || st.Damaged && verr == nil {
			t.Fatalf("Verify: %v, but a search of every list with vectors: %v, damaged %v", verr, serr, st.Damaged)
		}
		for _, nb := range res {
			if nb.Row >= ix.Rows() {
				t.Fatalf("search with vectors returned row %d of an index of %d rows", nb.Row, ix.Rows())
			}
		}
	})
}

// zeroSource gives every row the same vector.
type zeroSource []float32

func (z zeroSource) Vector(uint32) []float32 { return z }

// TestVerifyRefusesRowsPastRows is the regression test of a FuzzOpenIndex
// finding: a list whose checksum matches (as a buggy writer's would) but
// holds a row id at or past the index's row count was accepted by Open
// and Verify, and searches returned that row, which the engine uses to
// index its row table and vector file. Such a list is now corrupt.
func TestVerifyRefusesRowsPastRows(t *testing.T) {
	b := append([]byte(nil), indexFileSeeds(t)["l2-4bit"][0].([]byte)...)
	h, err := decodeHeader(b, uint64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	e, _ := getDirEntry(b[h.dirOff:], h.terms16())
	if e.n == 0 {
		t.Fatal("list 0 is empty")
	}
	binary.LittleEndian.PutUint32(b[h.dataOff+e.off:], h.rows) // first row id of list 0
	fixSums(b)
	ix, err := indexFromMapping(alignedCopy(b), uint64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Verify(); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Verify: %v, want ErrCorrupt", err)
	}
	ix, _ = indexFromMapping(alignedCopy(b), uint64(len(b)))
	res, err := ix.Search(make([]float32, 4), 100, SearchParams{NProbe: h.p.NList}, nil, nil)
	if !errors.Is(err, ErrCorrupt) {
		t.Errorf("Search: %v, %v; want ErrCorrupt", res, err)
	}
}

// TestSearchOfEveryListChecksFarLists is the regression test of a
// FuzzOpenIndex finding (in an 8-second CI-length run): a centroid so far
// from the query that its float32 distance is +Inf never entered the
// probe heap, so a search with NProbe = NList never read, nor checked,
// that list: a damaged list went unreported where Verify refused it.
// Every list is now probed when NProbe covers them all. (Its rows, at
// infinite distance, still never enter the candidates; only a damaged or
// hand-made file has such centroids.)
func TestSearchOfEveryListChecksFarLists(t *testing.T) {
	b := append([]byte(nil), indexFileSeeds(t)["l2-4bit"][0].([]byte)...)
	h, err := decodeHeader(b, uint64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	const far = 2
	binary.LittleEndian.PutUint32(b[h.metaOff+4*uint64(far*h.p.Dim):], math.Float32bits(1e37)) // its centroid
	e, _ := getDirEntry(b[h.dirOff+far*dirEntrySize:], h.terms16())
	binary.LittleEndian.PutUint32(b[h.dataOff+e.off:], h.rows) // a row id past the rows
	fixSums(b)
	ix, err := indexFromMapping(alignedCopy(b), uint64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	res, err := ix.Search(make([]float32, h.p.Dim), 5, SearchParams{NProbe: h.p.NList}, nil, nil)
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("search of every list: %v, %v; want ErrCorrupt", res, err)
	}
}
