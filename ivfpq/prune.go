package ivfpq

import (
	"math"

	"github.com/memrl/memrl/simd"
)

// List pruning (Voronoi bound).
//
// Every stored vector x sits in the list of its nearest centroid (by L2), so
// x in list l is at least as near c_l as c_1, the centroid nearest the
// query: x lies on c_l's side of the bisecting hyperplane of c_1 and c_l.
// The query lies on c_1's side, at distance
//
//	(‖q−c_l‖² − ‖q−c_1‖²) / (2‖c_l − c_1‖)
//
// from that plane, which is therefore a lower bound on ‖q−x‖ for every x in
// list l. And any k rows the search has already found, scored exactly, give
// an upper bound on the distance of the true k-th nearest row (that passes
// the filter: the candidates passed it). A list whose lower bound exceeds
// that upper bound cannot hold one of the true k nearest rows, so skipping
// it loses nothing: a search that prunes returns every true top-k row that
// the same search without pruning returns (a pruned list's rows could only
// have crowded the candidate heap), so recall never drops.
//
// The upper bound comes from re-ranking the k best candidates by estimate
// (k exact distances) when the probe reaches lists pruneFirst, 2·pruneFirst,
// 4·pruneFirst, …; each check of a list costs one distance between two
// centroids. On sift1m-deb at IVF4096 with the set's exact 10th-neighbour
// distance as the bound, 15-18% of the 128 nearest lists are pruned (8% of
// the 32 nearest); the bound the search can know is looser.
//
// An adaptive stop (SearchParams.PruneFactor f < 1): skip list l when its
// lower bound exceeds f times the k-th distance found, not the distance
// itself. The bisector is a weak bound (most of a list's rows lie far
// beyond it), so a list skipped this way rarely held a true neighbour, and
// the skips concentrate where the first lists already found close rows:
// easy queries end early, hard ones scan about what they asked for. It is
// no longer lossless. At 1M (IVF2048,PQ52x4, sift1m-deb's queries) f = 1
// reached recall@10 0.95 scanning 32.8 lists a query, f = 0.5 26.4, f = 0.4
// 23.4 and f = 0.3 22.1 (with more lists asked for); 0.99 took 92.4 lists
// at f = 1 and 63.7 at f = 0.5 (bench/README.md, "On a Xeon …: an
// adaptive stop").
// Such a skipped list is not counted as probed, so a filtered search that
// widens comes back to it (SearchFiltered).
//
// Pruning needs exact distances (a VectorSource) and L2 geometry: indexes
// scored by L2 (L2, and IP over unit vectors, whose order is L2's). Other IP
// indexes, and searches without a source, probe every list asked for.

// pruneFirst is the probe position of the first bound refresh: before it
// the candidates are too few and too rough to bound anything.
const pruneFirst = 8

// pruneFactor returns the pruning factor searches of ix with src and sp
// use, 0 when they do not prune, or an ErrBadParams error for an invalid
// SearchParams.PruneFactor.
func (ix *Index) pruneFactor(src VectorSource, sp SearchParams) (float32, error) {
	f, err := sp.pruneFactor()
	if err != nil || src == nil || !ix.p.l2ADC() || sp.NoPrune {
		return 0, err
	}
	return f, nil
}

// probeListsLocked probes s.probeOrder's lists in order, skipping those
// the Voronoi bound scaled by factor rules out (none when factor is 0),
// and returns how many it skipped; when factor < 1 it also leaves their
// numbers in s.skipped. REQUIRES: ix.mu held for reading; prepareLocked
// ran for q; s.cands reset.
func (ix *Index) probeListsLocked(q []float32, q4 lut4, f *Filter, s *searchScratch, k int, src VectorSource, factor float32) (int, error) {
	s.skipped = s.skipped[:0]
	if factor == 0 || len(s.probeOrder) <= pruneFirst {
		for i, l := range s.probeOrder {
			if i+1 < len(s.probeOrder) {
				ix.prefetchList(s.probeOrder[i+1])
			}
			if err := ix.probeLocked(q, l, q4, f, s, src); err != nil {
				return 0, err
			}
		}
		return 0, nil
	}
	scale := pruneScale(factor)
	s.memoRow, s.memoDist = growTo(s.memoRow, k), growTo(s.memoDist, k)
	s.memo.reset(s.memoRow, s.memoDist)
	c1 := s.probeOrder[0]
	d1 := s.coarseDist[c1]
	bound := float32(math.Inf(1))
	refresh := pruneFirst
	skipped := 0
	for i, l := range s.probeOrder {
		if i == refresh {
			bound = min(bound, ix.kthExactLocked(q, k, src, &s.cands, &s.memo, s))
			refresh *= 2
		}
		if i >= pruneFirst && ix.pruned(l, s.coarseDist[l], c1, d1, s.qq, bound, scale) {
			skipped++
			if factor < 1 {
				s.skipped = append(s.skipped, l)
			}
			continue
		}
		if i+1 < len(s.probeOrder) {
			ix.prefetchList(s.probeOrder[i+1])
		}
		if err := ix.probeLocked(q, l, q4, f, s, src); err != nil {
			return 0, err
		}
	}
	return skipped, nil
}

// pruneScale is the factor pruned compares squares with for a pruning
// factor: factor², with a hair of margin at factor 1 so that rounding
// never skips a list the exact bound would keep.
func pruneScale(factor float32) float32 {
	if factor == 1 {
		return 1 + 1e-5
	}
	return factor * factor
}

// pruned reports whether list l, at exact distance dl from a query of
// squared norm qq whose nearest probed list is c1 at distance d1, is
// skipped by the Voronoi bound against bound (the k-th exact distance
// found so far; +Inf skips nothing), lb² > scale·bound.
func (ix *Index) pruned(l int, dl float32, c1 int, d1, qq, bound, scale float32) bool {
	if math.IsInf(float64(bound), 1) {
		return false
	}
	d := ix.p.Dim
	// A probed list's distance is simd.L2Sq's (exactProbesLocked),
	// Dim squares summed in float32: it is off by at most about
	// Dim·2⁻²⁴·‖q−c‖² ≤ Dim·2⁻²³·(‖q‖² + ‖c‖²) (recursive
	// summation's worst case over terms of one sign). slack covers
	// both distances with room to spare, so the true difference
	// is at least gap.
	slack := float32(d+4) * 0x1p-23 * (2*qq + ix.coarseNorm[l] + ix.coarseNorm[c1])
	gap := dl - d1 - slack
	if !(gap > 0) {
		return false
	}
	sep := simd.L2Sq(ix.coarse[l*d:(l+1)*d], ix.coarse[c1*d:(c1+1)*d])
	// lb² = gap² / (4·sep) > scale·bound, without the square root.
	return gap*gap > 4*sep*bound*scale
}

// kthExactLocked returns the k-th smallest exact squared L2 distance from q
// among the k candidates of s.cands with the best estimates, or +Inf when
// it holds fewer than k. These are real rows that passed the search's
// filter, so the value bounds the distance of the true k-th nearest row
// (that passes) from above. s.cands is read as it stands, not settled: its
// buffer holds every candidate a cut would keep (k <= its limit), so its k
// best are the same, and a cut here would cost a selection the scan does
// not need yet.
//
// memo holds the distances the query's last refresh computed, and is left
// holding this one's: a row among the k best estimates at both refreshes
// is not read again. Most are: the lists scanned in between are farther.
// On sift1m-deb's held-out queries (k 10) the refreshes read 10.5 rows a
// query instead of 20 at 100k (IVF512,PQ52x4, nprobe 24) and 11.0 instead
// of 50 at 1M (IVF2048,PQ52x4, nprobe 192, 5 refreshes), each a cache and
// TLB miss. REQUIRES: ix.mu held for reading; memo reset for this query
// with room for k.
func (ix *Index) kthExactLocked(q []float32, k int, src VectorSource, c *candSet, memo *exactMemo, s *searchScratch) float32 {
	n := len(c.score)
	if n < k {
		return float32(math.Inf(1))
	}
	// The k best estimates by insertion into a sorted prefix: k is small
	// (K1) and the buffer at most 2·k·Refine long.
	best := s.best[:0]
	for i, sc := range c.score {
		if len(best) == k && sc >= c.score[best[k-1]] {
			continue
		}
		if len(best) < k {
			best = append(best, i)
		} else {
			best[k-1] = i
		}
		for j := len(best) - 1; j > 0 && c.score[best[j]] < c.score[best[j-1]]; j-- {
			best[j], best[j-1] = best[j-1], best[j]
		}
	}
	s.best = best
	// The rows not in memo are scattered over the vector file: ask for
	// all of them before reading any, as rerank does, so their cache and
	// TLB misses overlap instead of queueing (the k serial misses were 6%
	// of a search's CPU time at 1M, IVF2048,PQ64x4, nprobe 32).
	dist := growTo(s.bestDist, k)
	s.bestDist = dist
	s.vecs = s.vecs[:0]
	s.missed = s.missed[:0]
	for j, i := range best {
		if d, ok := memo.lookup(c.row[i]); ok {
			dist[j] = d
			continue
		}
		v := src.Vector(c.row[i])
		simd.Prefetch(v)
		s.vecs = append(s.vecs, v)
		s.missed = append(s.missed, j)
	}
	for m, v := range s.vecs {
		dist[s.missed[m]] = simd.L2Sq(q, v)
	}
	clear(s.vecs) // drop the references: the pooled scratch outlives the call
	var kth float32
	memo.row, memo.dist = memo.row[:0], memo.dist[:0]
	for j, i := range best {
		kth = max(kth, dist[j])
		memo.row = append(memo.row, c.row[i])
		memo.dist = append(memo.dist, dist[j])
	}
	return kth
}

// exactMemo is a query's rows whose exact distances kthExactLocked last
// computed, at most k of them, and those distances.
type exactMemo struct {
	row  []uint32
	dist []float32
}

// reset empties m, to hold up to cap(row) rows in row and dist (a query's
// share of a scratch array, so that appends never allocate).
// REQUIRES: cap(dist) >= cap(row).
func (m *exactMemo) reset(row []uint32, dist []float32) {
	m.row, m.dist = row[:0], dist[:0]
}

// lookup returns row's distance and true if m holds it.
func (m *exactMemo) lookup(row uint32) (float32, bool) {
	for i, r := range m.row {
		if r == row {
			return m.dist[i], true
		}
	}
	return 0, false
}

// prefetchMax bounds the bytes of one segment's codes prefetchList asks
// for: an average list at 1M (IVF2048, 26-byte codes) is 12.5 KB, and an
// outsized one should not evict the table and the list being scanned from
// the 1 MB L2.
const prefetchMax = 64 << 10

// prefetchList asks for list l's codes and terms (up to prefetchMax bytes
// of codes a segment), to be loaded while the list before it is scanned.
//
// Why all of it and not the first lines: a search at 1M streams about
// 460 KB of codes from memory in 36 lists of 12.5 KB, and the hardware
// prefetcher, which follows a list once it has seen it start, still
// leaves the scan waiting on memory: 1.65 ns a code with the first 1 KB
// prefetched, 1.25 with whole lists, 0.55 in cache (a 36-list scan over
// 25 MB of codes on a Zen 5; the first lines alone saved 5-8% of a search).
func (ix *Index) prefetchList(l int) {
	for _, seg := range [2]*segment{&ix.lists[l].base, &ix.lists[l].tail} {
		n := min(len(seg.codes), prefetchMax)
		simd.Prefetch(seg.codes[:n])
		// At most one of the term forms is set; the other is nil.
		rows := min(len(seg.ids), n*8/(ix.p.M*ix.p.Bits))
		simd.Prefetch(seg.terms16[:min(len(seg.terms16), rows)])
		simd.Prefetch(seg.terms[:min(len(seg.terms), rows)])
	}
}
