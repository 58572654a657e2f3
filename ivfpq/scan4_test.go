package ivfpq

import (
	"cmp"
	"slices"
	"testing"

	"github.com/memrl/memrl/simd"
	"github.com/memrl/memrl/vfs"
)

// scored is one vector's approximate score in the reference scan.
type scored struct {
	score float32
	row   uint32
}

// referenceScan4 scores every vector of the probed lists of a 4-bit index
// in plain Go, one code at a time, with the expression scan4 documents
// (quantized sum, then ·(1/scale) rounded, + offset + the list's distance,
// + the vector's term; for 16-bit terms, + the list's term base in that
// offset and then the rounded product t·step), and returns them all, best
// first.
// REQUIRES: ix.mu held for reading.
func referenceScan4(ix *Index, q []float32, nprobe int) []scored {
	p := ix.p
	s := ix.getScratch()
	q4 := ix.prepareLocked(q, nprobe, s)
	inv := 1 / q4.scale
	code := make([]byte, p.M)
	var all []scored
	for _, l := range s.probeOrder {
		offset := q4.offset + s.coarseDist[l]
		for _, seg := range []*segment{&ix.lists[l].base, &ix.lists[l].tail} {
			for i, row := range seg.ids {
				getCode4(seg.codes, i, p.M, code)
				var sum uint16
				for sub, c := range code {
					sum += uint16(s.lut8[sub*16+int(c)])
				}
				var d float32
				if seg.terms16 != nil {
					d = float32(float32(sum)*inv) + (offset + seg.grid.base)
					d += float32(float32(seg.terms16[i]) * seg.grid.step)
				} else {
					d = float32(float32(sum)*inv) + offset
					d += seg.terms[i]
				}
				all = append(all, scored{d, row})
			}
		}
	}
	slices.SortFunc(all, func(a, b scored) int { return cmp.Compare(a.score, b.score) })
	return all
}

// TestScan4KeepsTheBestEstimates holds the 4-bit scan of an L2 index (SIMD
// sums, simd.ScoreMask's pass/fail bits, the candidate heap) to the plain
// reference: with no vector source the search returns its candidates'
// approximate scores, and they must be exactly the smallest scores of every
// vector in the probed lists, at every kernel level, over an index read
// back from disk (base segments) with more vectors added since (tails).
// Rows must match wherever the score is not tied with the last kept one.
func TestScan4KeepsTheBestEstimates(t *testing.T) {
	const n, d, m, more = 3000, 16, 8, 700
	base := clustered(n+more, d, 24, 31)
	built := buildIndex(t, Params{Dim: d, NList: 16, M: m, Bits: 4}, base[:n*d], n)
	dir := t.TempDir()
	if err := built.Save(vfs.Default, dir); err != nil {
		t.Fatal(err)
	}
	ix, err := Open(vfs.Default, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	for i := n; i < n+more; i++ {
		if err := ix.Add(uint32(i), base[i*d:(i+1)*d]); err != nil {
			t.Fatal(err)
		}
	}
	start := simd.Level()
	defer simd.SetLevel(start)
	for _, level := range simd.Levels() {
		if err := simd.SetLevel(level); err != nil {
			t.Fatal(err)
		}
		for qi := 0; qi < 40; qi++ {
			q := base[(qi*97%(n+more))*d:][:d]
			for _, c := range []struct{ nprobe, keep int }{{1, 5}, {3, 50}, {6, 160}, {16, 400}} {
				got, err := ix.Search(q, c.keep, SearchParams{NProbe: c.nprobe, Refine: 1}, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				ix.mu.RLock()
				want := referenceScan4(ix, q, c.nprobe)
				ix.mu.RUnlock()
				if len(got) != min(c.keep, len(want)) {
					t.Fatalf("%s q%d nprobe %d: %d results, want %d", level, qi, c.nprobe, len(got), min(c.keep, len(want)))
				}
				last := want[len(got)-1].score
				for i, g := range got {
					if -g.Sim != want[i].score {
						t.Fatalf("%s q%d nprobe %d: result %d scores %g, reference %g", level, qi, c.nprobe, i, -g.Sim, want[i].score)
					}
					if want[i].score != last && g.Row != want[i].row && !tiedRow(want, g.Row, want[i].score) {
						t.Fatalf("%s q%d nprobe %d: result %d is row %d, reference row %d (score %g)", level, qi, c.nprobe, i, g.Row, want[i].row, want[i].score)
					}
				}
			}
		}
	}
}

// tiedRow reports whether row has the given score in the reference (rows
// with equal scores may come back in either order).
func tiedRow(all []scored, row uint32, score float32) bool {
	for _, s := range all {
		if s.row == row && s.score == score {
			return true
		}
	}
	return false
}
