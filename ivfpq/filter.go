package ivfpq

import (
	"fmt"
	"slices"

	"github.com/RoaringBitmap/roaring/v2"
)

// Filter narrows SearchFiltered to some rows and some similarities. The zero
// Filter keeps every row.
type Filter struct {
	// Deleted rows are never returned; nil for none.
	Deleted *roaring.Bitmap
	// Allow, when non-nil, is the only rows that may be returned: the
	// search scores every code of a probed list but lets only allowed rows
	// into its candidates.
	Allow *roaring.Bitmap
	// Match, when non-nil, must accept a row for it to be returned. It is
	// called only for rows not deleted, allowed, and good enough to enter
	// the candidate heap, at most once per row and search, while the
	// index's lock is held for reading: it must not call the index.
	Match func(row uint32) bool
	// MinSim, when HasMinSim, is the least (exact, re-ranked) similarity a
	// result may have; widening counts only results that reach it.
	MinSim    float32
	HasMinSim bool
}

// keep reports whether row may be a candidate.
func (f *Filter) keep(row uint32) bool {
	if f.Deleted != nil && f.Deleted.Contains(row) {
		return false
	}
	if f.Allow != nil && !f.Allow.Contains(row) {
		return false
	}
	return f.Match == nil || f.Match(row)
}

// SearchStats describes how a SearchFiltered call went.
type SearchStats struct {
	Probed int // inverted lists scanned, or pruned at PruneFactor 1; NProbe or more after widening unless pruned below 1
	Pruned int // lists skipped by the Voronoi bound (prune.go); at PruneFactor 1 they count in Probed
	Rounds int // probing rounds: 1, plus one per widening
	// Damaged is set when a probed list failed its checksum and was
	// searched around (damaged.go): Verify names it; rebuild the index.
	Damaged bool
}

// SearchFiltered returns the k rows most similar to q that f keeps, best
// first (ties by lower row), like Search, but it widens: it first probes
// the sp.NProbe nearest lists; while the candidate heap holds fewer than
// k·Refine rows that f keeps, or once it is full its re-ranked rows hold
// fewer than k with Sim >= f.MinSim (when f.HasMinSim), it probes further
// lists in order of their centroid's distance to q, each round as many
// more as it has probed so far (so NProbe, 2·NProbe, 4·NProbe, ...), until
// that holds or every list has been probed. So it returns fewer than k
// rows only when the index holds fewer than k rows that f keeps and that
// reach MinSim; and a filtered search re-ranks as many candidates as an
// unfiltered one, which is what keeps its recall when few rows pass f
// (waiting for only k candidates lost a tenth of recall@10 at 1% allowed).
//
// Bound: a search scans at most every code once and re-ranks its
// k·Refine candidates at most 1 + ⌈log2(NList/NProbe)⌉ times (only rounds
// that end with a full heap, or with every list probed, re-rank). Without
// src no re-rank happens and MinSim is checked against the quantized
// estimate.
//
// Safe for concurrent use like Search; f.Match must be too, if searches
// share it. A damaged list is searched around as by Search, and reported in
// SearchStats.Damaged.
func (ix *Index) SearchFiltered(q []float32, k int, sp SearchParams, f Filter, src VectorSource) ([]Neighbor, SearchStats, error) {
	var st SearchStats
	p := ix.p
	if len(q) != p.Dim {
		return nil, st, fmt.Errorf("%w: query has %d dimensions, index has %d", ErrBadParams, len(q), p.Dim)
	}
	if k <= 0 {
		return nil, st, nil
	}
	nprobe := sp.NProbe
	if nprobe <= 0 {
		nprobe = DefaultNProbe(p.NList)
	}
	nprobe = min(nprobe, p.NList)
	refine := sp.Refine
	if refine <= 0 {
		refine = DefaultRefine(p.Bits)
	}
	prune, err := ix.pruneFactor(src, sp)
	if err != nil {
		return nil, st, err
	}
	if f.Deleted != nil && f.Deleted.IsEmpty() {
		f.Deleted = nil
	}

	s := ix.getScratch()
	defer ix.scratch.Put(s)

	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.closed {
		return nil, st, ErrClosed
	}
	var fp *Filter
	if f.Deleted != nil || f.Allow != nil || f.Match != nil {
		fp = &f
	}
	q4 := ix.prepareLocked(q, nprobe, s)
	s.cands.reset(k*refine, &s.sel)
	skipped, err := ix.probeListsLocked(q, q4, fp, s, k, src, prune)
	if err != nil {
		return nil, st, err
	}
	// A list pruned at factor 1 counts as probed: it provably holds none
	// of the k nearest rows that pass, so widening need not come back to
	// it. One skipped by a smaller factor (listed in s.skipped) might, so
	// it does not count, and widening may scan it.
	st.Probed, st.Pruned, st.Rounds = len(s.probeOrder)-len(s.skipped), skipped, 1
	// order is every list nearest first, built only when a search widens;
	// next indexes it. Lists already probed are skipped by s.probed, not
	// by position: the coarse step's heap and this sort may break ties
	// between equal (or NaN) distances differently.
	var order []int
	next := 0
	for {
		var res []Neighbor
		s.cands.settle()
		if s.cands.full() || st.Probed == p.NList {
			res = ix.rerankAll(q, k, src, s)
			if f.HasMinSim {
				res = slices.DeleteFunc(res, func(n Neighbor) bool { return !(n.Sim >= f.MinSim) })
			}
			if len(res) >= k || st.Probed == p.NList {
				st.Damaged = s.damaged
				return slices.Clone(res[:min(k, len(res))]), st, nil
			}
		}
		if order == nil {
			order = s.allListsNearestFirst(p.NList)
			if len(s.probed) < p.NList {
				s.probed = make([]bool, p.NList)
			}
			clear(s.probed)
			for _, l := range s.probeOrder {
				s.probed[l] = true
			}
			for _, l := range s.skipped {
				s.probed[l] = false
			}
		}
		want := min(2*st.Probed, p.NList)
		for ; st.Probed < want && next < len(order); next++ {
			l := order[next]
			if s.probed[l] {
				continue
			}
			s.probed[l] = true
			s.coarseDist[l] = ix.exactCoarse(q, l) // the widening order's is approximate
			if err := ix.probeLocked(q, l, q4, fp, s, src); err != nil {
				return nil, st, err
			}
			st.Probed++
		}
		st.Rounds++
	}
}

// rerankAll re-scores every candidate in s.cands and returns them in
// s.rerank (valid until the next call): the best k first, best first, and
// the others after them in no particular order. Every candidate after the
// first k is no better than the k-th, so dropping those below MinSim
// leaves the best k that reach it first.
func (ix *Index) rerankAll(q []float32, k int, src VectorSource, s *searchScratch) []Neighbor {
	return ix.rerankCands(q, k, src, &s.cands, s, nil, nil)
}
