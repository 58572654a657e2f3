package ivfpq

import (
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/memrl/memrl/simd"
)

// scanChunk is how many vectors' approximate scores are computed per kernel
// call before they are merged into the candidate heap.
const scanChunk = 256

// searchScratch is one search's working memory, pooled per index so that a
// query allocates only its result slice.
type searchScratch struct {
	sel        selectScratch     // the candidate sets' partition scratch (cands.go)
	coarseDist []float32         // [coarseSlots(NList)]; the first NList are the lists' distances
	listKeys   []uint64          // selectProbes' (distance, list) keys, [NList]
	listMask   []uint32          // selectProbes' lists within its bound, [ceil(NList/32)]
	groupMin   []int32           // probeBound's group representatives, [2·nprobe]
	probeOrder []int             // probed lists, nearest first
	order      []int             // every list, nearest first (SearchFiltered's widening)
	probed     []bool            // [NList] lists probed so far (SearchFiltered's widening)
	skipped    []int             // lists the last probe skipped with a PruneFactor below 1
	lut        []float32         // [M*ksub] float look-up table
	lut8       []byte            // [ceil(M/2)*2*16] quantized table (4-bit codes)
	out        []float32         // [scanChunk] approximate scores
	primeRows  [scanChunk]uint32 // scan4's priming scratch (prime.go)
	sums       []uint16          // [scanChunk] quantized scores (4-bit codes)
	masks      []uint32          // [scanChunk/32]
	code       []byte            // [M]
	cands      candSet           // best k*refine candidates by approximate score
	rerank     []Neighbor
	vecs       [][]float32 // the candidates' raw vectors, in s.cands order (nil: in the memo)
	known      []float32   // rerankCands: a memo's distance where vecs is nil
	qq         float32     // ‖q‖², set by prepareLocked
	best       []int       // kthExactLocked's selection
	bestDist   []float32   // and its exact distances
	missed     []int       // the positions in best not in the memo
	memo       exactMemo   // kthExactLocked's last distances (Search's)
	memoRow    []uint32    // memo's storage, [k]
	memoDist   []float32
	// damaged is set when the search probes a damaged list, and
	// orphansScored once it has scored the damaged lists' rows
	// (damaged.go); prepareLocked clears both.
	damaged       bool
	orphansScored bool
}

func (ix *Index) getScratch() *searchScratch {
	if s, ok := ix.scratch.Get().(*searchScratch); ok {
		return s
	}
	p := ix.p
	return &searchScratch{
		coarseDist: make([]float32, coarseSlots(p.NList)),
		listKeys:   make([]uint64, 0, p.NList),
		lut:        make([]float32, p.M*p.ksub()),
		lut8:       make([]byte, (p.M+1)/2*2*16),
		out:        make([]float32, scanChunk),
		sums:       make([]uint16, scanChunk),
		masks:      make([]uint32, scanChunk/simd.FastScanBlock),
		code:       make([]byte, p.M),
	}
}

// Search returns the k rows most similar to q, best first (ties by lower
// row). It probes the sp.NProbe lists whose centroids are nearest to q,
// scores their codes by asymmetric distance, keeps the best k·sp.Refine
// candidates not in deleted, and re-ranks them exactly with the raw vectors
// from src. Sim is then exact; when src is nil Sim is the approximate
// (quantized) similarity and no re-rank happens.
//
// deleted may be nil. Rows in it are never returned; it is consulted only for
// candidates good enough to enter the candidate heap.
//
// Search is safe to call concurrently with Search, Add, AddBatch and Save.
// A list read from the index file that fails its checksum is searched
// around when src is set (its rows are scored exactly: damaged.go); without
// src Search returns ErrCorrupt. It returns ErrClosed after Close.
func (ix *Index) Search(q []float32, k int, sp SearchParams, deleted *roaring.Bitmap, src VectorSource) ([]Neighbor, error) {
	p := ix.p
	if len(q) != p.Dim {
		return nil, fmt.Errorf("%w: query has %d dimensions, index has %d", ErrBadParams, len(q), p.Dim)
	}
	if k <= 0 {
		return nil, nil
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
		return nil, err
	}
	if deleted != nil && deleted.IsEmpty() {
		deleted = nil
	}

	s := ix.getScratch()
	defer ix.scratch.Put(s)

	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.closed {
		return nil, ErrClosed
	}
	var f *Filter
	if deleted != nil {
		f = &Filter{Deleted: deleted}
	}
	q4 := ix.prepareLocked(q, nprobe, s)
	s.cands.reset(k*refine, &s.sel)
	if _, err := ix.probeListsLocked(q, q4, f, s, k, src, prune); err != nil {
		return nil, err
	}
	return ix.rerank(q, k, src, s), nil
}

// prepareLocked runs a search's coarse step and builds its look-up tables:
// s.coarseDist holds every centroid's L2 distance to q (exact for the
// lists in s.probeOrder, approximate for the others: see exactProbesLocked),
// s.probeOrder the nprobe nearest lists, nearest first (ties by lower
// list number), and
// s.lut (and, for 4-bit codes, s.lut8 described by the returned lut4) the
// per-query table. REQUIRES: ix.mu held for reading; 1 <= nprobe <= NList.
func (ix *Index) prepareLocked(q []float32, nprobe int, s *searchScratch) lut4 {
	// Coarse step: the nprobe nearest centroids, nearest first, chosen
	// by distances to the half-precision centroids (Index.coarseBlk16):
	// ‖q−c‖² = ‖q‖² + ‖c‖² − 2⟨q, c⟩ with the norms precomputed, one pass
	// of dot products over the blocked centroids. The chosen lists' exact
	// distances then replace those.
	simd.DotBlockedF16(q, ix.coarseBlk16, s.coarseDist)
	ix.probesFromDotsLocked(q, s.coarseDist, nprobe, s)
	return ix.buildLUT(q, s)
}

// probesFromDotsLocked is prepareLocked's coarse step after the dot
// products: dots holds ⟨q, c16⟩ (scaled) for every list, as
// simd.DotBlockedF16 (or DotBlockedF16Multi, bit for bit the same) left
// them; it may be s.coarseDist itself. It sets s.qq, s.coarseDist and
// s.probeOrder. REQUIRES: ix.mu held for reading; 1 <= nprobe <= NList.
func (ix *Index) probesFromDotsLocked(q, dots []float32, nprobe int, s *searchScratch) {
	p := ix.p
	s.qq = simd.Dot(q, q)
	s.damaged, s.orphansScored = false, false
	unscale := 2 / ix.coarseScale
	// ‖q‖² + ‖c‖² − (2/scale)·dot for every list, in SIMD.
	simd.CoarseDist(s.coarseDist[:p.NList], ix.coarseNorm16[:p.NList], dots[:p.NList], s.qq, unscale)
	s.selectProbes(p.NList, nprobe)
	ix.exactProbesLocked(q, s)
}

// buildLUT builds q's look-up table in s.lut and, for 4-bit codes, its
// quantized form in s.lut8, described by the returned lut4.
func (ix *Index) buildLUT(q []float32, s *searchScratch) lut4 {
	p := ix.p
	// One table serves every list. Scores are kept as "smaller is better".
	// IP ADC: <q, c+r̂> = <q,c> + Σ<q_m, r̂_m>, so the table is -<q_m, r_mk>
	// and a list adds -<q,c>. L2 ADC: ‖q-c-r̂‖² = ‖q-c‖² - 2Σ<q_m, r̂_m> +
	// (‖r̂‖² + 2<c, r̂>), so the table is -2<q_m, r_mk>, a list adds ‖q-c‖²
	// (already computed above) and each vector its stored term.
	pqLUT(p, q, ix.book, s.lut, false)
	factor := float32(-1)
	if p.l2ADC() {
		factor = -2
	}
	for i := range s.lut {
		s.lut[i] *= factor
	}
	var q4 lut4
	if p.Bits == 4 {
		q4 = quantizeLUT4(s.lut, p.M, s.lut8)
	}
	return q4
}

// exactProbesLocked replaces the half-precision distances of the lists in
// s.probeOrder by exact ones and puts them in order of those, nearest
// first (ties by lower list number): a probed list's distance is its
// scores' bias and the pruning bound's input, so it must be the float32
// distance to the centroid. REQUIRES: ix.mu held for reading.
func (ix *Index) exactProbesLocked(q []float32, s *searchScratch) {
	keys := s.listKeys[:0]
	for _, l := range s.probeOrder {
		s.coarseDist[l] = ix.exactCoarse(q, l)
		keys = append(keys, listKey(s.coarseDist[l], l))
	}
	slices.Sort(keys)
	for i, k := range keys {
		s.probeOrder[i] = int(uint32(k))
	}
	s.listKeys = keys
}

// exactCoarse returns the squared L2 distance from q to list l's centroid.
func (ix *Index) exactCoarse(q []float32, l int) float32 {
	d := ix.p.Dim
	return simd.L2Sq(q, ix.coarse[l*d:(l+1)*d])
}

// probeLocked scores list l's codes and merges those f keeps (every code
// when f is nil) into s.cands. If the list's base segment fails its
// checksum, the damaged lists' rows are scored exactly from src instead
// (damaged.go), or, when src is nil, it returns ErrCorrupt.
// REQUIRES: ix.mu held for reading; prepareLocked ran for q.
func (ix *Index) probeLocked(q []float32, l int, q4 lut4, f *Filter, s *searchScratch, src VectorSource) error {
	lst := &ix.lists[l]
	base := &lst.base
	if err := ix.checkList(l); err != nil {
		if src == nil {
			return err
		}
		ix.scoreOrphansLocked(q, f, s, src)
		base = &noSegment
	}
	if len(base.ids)+len(lst.tail.ids) == 0 {
		return nil
	}
	ix.scanListLocked(q, l, base, ix.listBias(q, l, s.coarseDist[l]), q4, s.lut, s.lut8, f, &s.cands, s)
	return nil
}

// listBias is what list l adds to every score of its codes for query q:
// dist, the list's exact L2 distance to q, for L2-scored indexes, and
// −⟨q, c_l⟩ for the others.
func (ix *Index) listBias(q []float32, l int, dist float32) float32 {
	if ix.p.l2ADC() {
		return dist
	}
	return -simd.Dot(q, ix.coarse[l*ix.p.Dim:(l+1)*ix.p.Dim])
}

// scanListLocked scores list l's codes (its base segment base, which is
// &noSegment for a damaged one, and its tail) with the tables lut (8-bit
// codes) or lut8 and q4 (4-bit codes), adding bias, and merges those f
// keeps into c; s provides the scan's temporaries. REQUIRES: ix.mu held
// for reading; list l's base checked (checkList) unless base is
// &noSegment.
func (ix *Index) scanListLocked(q []float32, l int, base *segment, bias float32, q4 lut4, lut []float32, lut8 []byte, f *Filter, c *candSet, s *searchScratch) {
	for _, seg := range [2]*segment{base, &ix.lists[l].tail} {
		if len(seg.ids) == 0 {
			continue
		}
		if ix.p.Bits == 8 {
			ix.scan8(seg, lut, bias, f, c, s)
		} else {
			ix.scan4(seg, q4, lut8, bias, f, c, s)
		}
	}
}

// scan8 scores one segment of 8-bit codes with lut and merges it into
// c (s.out is its scratch).
func (ix *Index) scan8(seg *segment, lut []float32, bias float32, f *Filter, c *candSet, s *searchScratch) {
	m := ix.p.M
	n := len(seg.ids)
	for c0 := 0; c0 < n; c0 += scanChunk {
		c1 := min(c0+scanChunk, n)
		out := s.out[:c1-c0]
		simd.ScanPQ8(seg.codes[c0*m:c1*m], m, lut, out)
		if seg.terms != nil {
			for i, t := range seg.terms[c0:c1] {
				out[i] += t
			}
		} else if seg.terms16 != nil {
			for i, t := range seg.terms16[c0:c1] {
				out[i] += seg.grid.value(t)
			}
		}
		worst := c.worst() - bias
		for i, d := range out {
			if d >= worst {
				continue
			}
			row := seg.ids[c0+i]
			if f != nil && !f.keep(row) {
				continue
			}
			c.push(d+bias, row)
			worst = c.worst() - bias
		}
	}
}

// scan4 scores one segment of 4-bit fast-scan codes with the byte table
// lut8 (described by q4) and merges it into c (s.sums and s.masks are its
// scratch). The byte table gives each vector sum/scale + offset; with terms,
// vector i adds terms[i].
//
// Which vectors are worth a look at all is decided in SIMD. Without terms
// the kernel's own threshold mask does it: a quantized sum that cannot beat
// the worst candidate is skipped. With terms (L2 indexes) the terms differ
// from vector to vector, so no single 16-bit threshold is tight: bounding
// by the chunk's smallest term let 29% of the codes through at 1M
// (IVF2048,PQ64x4, nprobe 32) of which one in nine entered the heap, and
// each was a mispredicted branch and a float computed in scalar code.
// Instead simd.ScoreMask computes every vector's full score and compares it
// with the worst candidate as it stood at the start of the chunk, the same
// expression in the same float32 order as the check below, so the mask
// keeps exactly the vectors that check could admit (the worst only falls
// within the chunk) and no candidate is lost.
//
// A base segment with 16-bit terms (format version 4) uses
// simd.ScoreMask16 instead, with the list's term base folded into the
// offset and its step as the terms' scale, so vector i scores
//
//	d := float32(float32(sum)*inv) + (q4.offset + bias + grid.base)
//	d += float32(float32(terms16[i]) * grid.step)
//
// both in the kernel and in the check below (the same float32 operations
// in the same order; offset is computed once, before both), so again the
// mask keeps exactly what the check could admit. The score differs from
// the dequantized term's (grid.value) only in float32 rounding.
func (ix *Index) scan4(seg *segment, q4 lut4, lut8 []byte, bias float32, f *Filter, c *candSet, s *searchScratch) {
	m := ix.p.M
	scale, offset := q4.scale, q4.offset+bias
	if seg.terms16 != nil {
		offset += seg.grid.base
	}
	step := seg.grid.step
	inv := 1 / scale
	n := len(seg.ids)
	bb := block4Bytes(m)
	nblocks := (n + simd.FastScanBlock - 1) / simd.FastScanBlock
	const chunkBlocks = scanChunk / simd.FastScanBlock
	for b0 := 0; b0 < nblocks; b0 += chunkBlocks {
		b1 := min(b0+chunkBlocks, nblocks)
		v0, v1 := b0*simd.FastScanBlock, min(b1*simd.FastScanBlock, n)
		masks := s.masks[:b1-b0]
		// The first chunk of an unbounded set gets its bound from the
		// chunk's scores before the merge (prime.go); its kernel then runs
		// with no threshold, as it does with terms.
		primed := c.primeable(v1-v0, f)
		if primed {
			simd.FastScan4(seg.codes[b0*bb:b1*bb], m, lut8, math.MaxUint16, s.sums, masks)
			primeChunkScores(seg, v0, v1-v0, s.sums, inv, offset, step, s.out)
			c.primeBound(s.out[:v1-v0], s.primeRows[:])
		}
		switch {
		case seg.terms != nil:
			if !primed {
				simd.FastScan4(seg.codes[b0*bb:b1*bb], m, lut8, math.MaxUint16, s.sums, masks)
			}
			simd.ScoreMask(s.sums[:v1-v0], inv, offset, seg.terms[v0:v1], c.worst(), masks)
		case seg.terms16 != nil:
			if !primed {
				simd.FastScan4(seg.codes[b0*bb:b1*bb], m, lut8, math.MaxUint16, s.sums, masks)
			}
			simd.ScoreMask16(s.sums[:v1-v0], inv, offset, seg.terms16[v0:v1], step, c.worst(), masks)
		case primed:
			// Every mask bit set; the merge's check below applies the bound.
		default:
			thresh := uint16(math.MaxUint16)
			if w := c.worst(); !math.IsInf(float64(w), 1) {
				t := math.Ceil(float64((w - offset) * scale))
				switch {
				case t <= 0:
					thresh = 0
				case t < math.MaxUint16:
					thresh = uint16(t)
				}
			}
			if thresh == 0 {
				continue // nothing in this chunk can beat the candidates
			}
			simd.FastScan4(seg.codes[b0*bb:b1*bb], m, lut8, thresh, s.sums, masks)
		}
		for bi, mask := range masks {
			for mask != 0 {
				j := bits.TrailingZeros32(mask)
				mask &= mask - 1
				idx := (b0+bi)*simd.FastScanBlock + j
				if idx >= n {
					break
				}
				// ScoreMask's (ScoreMask16's) expression: the
				// conversions round the products (no fused multiply-add).
				d := float32(float32(s.sums[bi*simd.FastScanBlock+j])*inv) + offset
				if seg.terms != nil {
					d += seg.terms[idx]
				} else if seg.terms16 != nil {
					d += float32(float32(seg.terms16[idx]) * step)
				}
				if d >= c.worst() {
					continue
				}
				row := seg.ids[idx]
				if f != nil && !f.keep(row) {
					continue
				}
				c.push(d, row)
			}
		}
	}
}

// lut4 describes a quantized 4-bit table: Σ lut ≈ Σ q / scale + offset.
type lut4 struct{ scale, offset float32 }

// quantizeLUT4 maps the float table lut ([m][16]) to bytes in q
// ([ceil(m/2)*2][16], the padding row zeroed): q = round((lut - min_s)·scale)
// with min_s each sub-space's minimum and scale = 255 / the largest
// sub-space range, so a sum of m entries fits 16 bits. offset is Σ min_s.
// simd.QuantizeLUT4 does it: in Go, with comparisons that branch on the
// data, it was 3.7% of a batch's CPU profile at 1M (IVF2048,PQ52x4,
// nprobe 48, Refine 8).
func quantizeLUT4(lut []float32, m int, q []byte) lut4 {
	scale, offset := simd.QuantizeLUT4(lut, m, q)
	clear(q[m*16:])
	return lut4{scale: scale, offset: offset}
}

// rerank turns s.cands into the final k results.
func (ix *Index) rerank(q []float32, k int, src VectorSource, s *searchScratch) []Neighbor {
	r := ix.rerankCands(q, k, src, &s.cands, s, nil, nil)
	return slices.Clone(r[:min(k, len(r))])
}

// rerankAhead is how many rows ahead of the one being scored the re-rank
// asks for (simd.Prefetch). The candidates' rows are scattered over the
// vector file, so each is a cache (and often TLB) miss; asking for a row
// before it is needed lets the misses overlap rather than queue one
// behind the other. Asking for all of a query's rows before scoring any
// (80 rows of 512 bytes are 640 cache lines) fills the core's miss
// buffers many times over, and the prefetches then wait for each other
// instead of for the arithmetic; a window of a few rows keeps about as
// many lines in flight as the core can track while the rows before them
// are scored (simd.BenchmarkRerankHuge, "interleaved": the window and the
// whole-query prefetch side by side).
const rerankAhead = 4

// rerankCands re-scores every candidate of c and returns them in s.rerank
// (valid until the next call): the best k first, best first, and the
// others after them in no particular order. If next is not nil it is the
// candidates, settled, of the query the caller re-ranks next with the
// same src: the last rows' window runs on into its first rows, so that
// its misses overlap this query's arithmetic. Which rows are asked for
// when changes no result (a prefetch only moves data between caches).
// memo, if not nil, holds exact L2 distances from q that the search's
// last pruning refresh computed (kthExactLocked): an L2 index takes those
// rows' distances from it instead of reading the rows again. At 1M
// (IVF2048,PQ52x4, nprobe 48, Refine 8) the re-rank was an eighth of a
// batch's CPU profile, nearly all of it waiting for rows; a refresh's k
// rows are among the k·Refine here, so the memo spares about one read in
// Refine.
func (ix *Index) rerankCands(q []float32, k int, src VectorSource, c *candSet, s *searchScratch, next *candSet, memo *exactMemo) []Neighbor {
	c.settle()
	r := s.rerank[:0]
	var qq float32
	if ix.p.unitIP && src == nil {
		qq = simd.Dot(q, q)
	}
	s.vecs = s.vecs[:0]
	if memo != nil && (len(memo.row) == 0 || ix.p.Metric == IP || src == nil) {
		memo = nil // nothing to reuse, or not the distance this scores
	}
	if src != nil {
		s.known = s.known[:0]
		for _, row := range c.row {
			if memo != nil {
				if d, ok := memo.lookup(row); ok {
					// Scored exactly by the last pruning refresh
					// (kthExactLocked): the same L2Sq of the same
					// vectors, so the same float, without reading
					// the row again.
					s.vecs = append(s.vecs, nil)
					s.known = append(s.known, d)
					continue
				}
			}
			s.vecs = append(s.vecs, src.Vector(row))
			s.known = append(s.known, 0)
		}
		for _, v := range s.vecs[:min(rerankAhead, len(s.vecs))] {
			simd.Prefetch(v)
		}
	}
	n := len(c.row)
	for i, row := range c.row {
		sim := -c.score[i]
		if ix.p.unitIP {
			// ⟨q, x⟩ = (‖q‖² + ‖x‖² − ‖q−x‖²)/2 with ‖x‖ = 1.
			sim = (qq + 1 - c.score[i]) / 2
		}
		if src != nil {
			if j := i + rerankAhead; j < n {
				simd.Prefetch(s.vecs[j])
			} else if next != nil && j-n < len(next.row) {
				simd.Prefetch(src.Vector(next.row[j-n]))
			}
			v := s.vecs[i]
			switch {
			case v == nil:
				sim = -s.known[i]
			case ix.p.Metric == IP:
				sim = simd.Dot(q, v)
			default:
				sim = -simd.L2Sq(q, v)
			}
		}
		r = append(r, Neighbor{Row: row, Sim: sim})
	}
	bestFirst(r, k)
	s.rerank = r
	clear(s.vecs) // drop the references: the pooled scratch outlives the call
	return r
}

// better orders results: higher Sim first, ties by lower row.
func better(a, b Neighbor) bool {
	return a.Sim > b.Sim || (a.Sim == b.Sim && a.Row < b.Row)
}

// bestFirst puts the best k of r (by better) in r[:k], best first, and the
// others after them in no particular order; with k <= 0 or k >= len(r) it
// sorts all of r. Only k are returned, and sorting all k·Refine
// candidates by a comparison function was 5% of a search at 1M
// (IVF2048,PQ64x4, Refine 12): here the first k are sorted and each later
// one is compared with the k-th, which turns most away, and inserted by
// shifting only when it beats it.
func bestFirst(r []Neighbor, k int) {
	cmp := func(a, b Neighbor) int {
		switch {
		case better(a, b):
			return -1
		case better(b, a):
			return 1
		}
		return 0
	}
	if k <= 0 || k >= len(r) {
		slices.SortFunc(r, cmp)
		return
	}
	slices.SortFunc(r[:k], cmp)
	for i := k; i < len(r); i++ {
		x := r[i]
		if !better(x, r[k-1]) {
			continue
		}
		r[i] = r[k-1] // the evicted k-th joins the rest
		j := k - 1
		for ; j > 0 && better(x, r[j-1]); j-- {
			r[j] = r[j-1]
		}
		r[j] = x
	}
}
