package ivfpq

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/memrl/memrl/simd"
)

// Batch search: many queries, the same results as one Search (or
// SearchFiltered) each, for less work than a loop over them.
//
// A worker takes a chunk of queries and, under one shared hold of ix.mu:
//
//  1. runs the coarse step batchTile queries at a time: one
//     simd.DotBlockedF16Multi pass over the half-precision centroids scores
//     the tile (the tile's scores, batchTile·NList floats, stay in L2),
//     reading the centroids once per four queries instead of once per
//     query; the kernel's scores are bit for bit the one-query kernel's, so
//     each query then chooses exactly the lists Search would
//     (probesFromDotsLocked), and builds its look-up tables once;
//  2. scans the probed lists grouped by list: the (query, list) pairs of a
//     round are sorted by list (a counting sort), and each list is read
//     once for every query of the chunk that probes it (FAISS's
//     query-batched scan): 4-bit codes four queries at a time, each chunk
//     of codes loaded and split into nibbles once for the four
//     (simd.FastScan4Multi, scanGroup4Locked), which halved the fast
//     scan's CPU at 100k; 8-bit codes a query at a time, the codes in
//     cache after the first;
//  3. re-ranks each query's candidates, asking for each row a few rows
//     before it is scored (simd.Prefetch, rerankAhead), the window running
//     on from a query's last rows into the next query's first, so that
//     the cache misses overlap the arithmetic.
//
// Why rounds: Search's pruning (prune.go) refreshes its bound, the k-th
// exact distance among the candidates, when its probe reaches lists 8, 16,
// 32, …, and then decides for each later list from that bound. The batch
// scans in rounds that start at those positions too, positions [0, 1),
// [1, 8), [8, 16), [16, 32), …: at the start of a round
// from 8 on it refreshes every query's bound, then decides every skip of
// the round, then scans. The candidates a search
// keeps are the best k·Refine of what it scanned whatever the order it
// scanned it in (cands.go keeps every score below its bound, which never
// falls below the limit-th best), so at every refresh a query's
// candidates, bound and skips are what Search's were, and so are its
// results (ties between equal scores aside).
//
// Why rounds before the first refresh, and a first cut after each: the order
// does not change what is kept, but it changes how much is pushed. A
// candidate set admits whatever beats its bound, which is +Inf until its
// first cut; Search scans a query's nearest list first, which fills the
// set with good scores and makes the bound tight for the lists after it.
// One round of positions [0, 8) scanned in list order gave a query its
// 8 nearest lists in any order, often its farthest first, and the cuts
// came late (after 2·k·Refine pushes). At 100k (IVF512,PQ52x4, sift1m-deb's
// held-out queries, nprobe 24, Refine 8) a batch pushed 482 candidates a
// query and selected among 848, where Search pushed 341 and selected among
// 568; scanned in these rounds, the batch pushes 340 and selects among 571
// (the candidate set was an eighth of the batch's CPU profile). A round
// costs a clear and a scan of a count per list (NList), a few µs a chunk.
//
// Why one round for positions [1, 8): once the first round has cut every
// query's candidates (and since a set's first chunk primes its bound,
// prime.go), the order of the next lists matters little to what is
// pushed, and each round reads every list it touches once for the queries
// that probe it: at 1M (nprobe 48, 2,000 queries in two chunks) the
// scans of a list for a group of queries fell from 19,771 to 16,712 (the
// same 66,778 query–list pairs, 3.4 → 4.0 queries a group). Measured by alternating the two schedules batch by batch in one process
// (1M, IVF2048,PQ52x4, batches of 2,000 on 2 threads): 4–5% less CPU at
// nprobe 48, Refine 8, and 2% at nprobe 160, Refine 32; [0, 2), [2, 8) and
// [0, 8) gained less or lost.
//
// What falls back to Search: a query that probes a damaged list (it needs
// the damaged lists' rows scored exactly, damaged.go), and, in
// SearchBatchFiltered, one whose probed lists did not fill its candidates
// or whose re-ranked rows hold fewer than k reaching MinSim (it widens).
// Those run alone after the chunk, outside the lock.

// The rounds start at every power of two, and so at Search's refresh
// positions pruneFirst·2^j only if pruneFirst is a power of two: this
// array index fails to compile otherwise.
var _ = [1]struct{}{}[pruneFirst&(pruneFirst-1)]

// batchTile is how many queries one coarse-step pass scores: 16 queries
// of 2,048 lists are 128 KB of scores, in L2 while each query selects its
// lists from its row.
const batchTile = 16

// batchChunkBytes bounds a chunk's per-query state (candidates, tables,
// probe lists): a chunk's queries are all in flight at once, and the
// more there are the more of them share each list's read, but their
// state should stay in the last-level cache (4-bit codes at k 10, Refine
// 16, nprobe 32: about 4 KB a query, so 2,048 queries).
const batchChunkBytes = 8 << 20

// batchMaxChunk bounds a chunk's queries, and so how long a worker holds
// ix.mu shared (an Add waits for it): at 1M rows a query is 50–200 µs of
// work, so a chunk at most a few hundred milliseconds.
const batchMaxChunk = 2048

// BatchStats describes how a batch search went.
type BatchStats struct {
	// Alone counts the queries that were searched alone, after the batch:
	// those that probed a damaged list, and SearchBatchFiltered's that
	// had to widen.
	Alone int
	// Damaged is set when a probed list failed its checksum and was
	// searched around (damaged.go): Verify names it; rebuild the index.
	Damaged bool
}

// batchQuery is one query's state in a chunk.
type batchQuery struct {
	cands   candSet
	memo    exactMemo // kthExactLocked's last distances
	q4      lut4
	qq      float32 // ‖q‖²
	bound   float32 // the pruning bound: the k-th exact distance found, +Inf until known
	skipped int     // lists skipped by a pruning factor below 1
	alone   bool    // to be searched alone after the chunk (see above)
}

// batchScratch is one worker's memory for a chunk, pooled per index.
type batchScratch struct {
	s      *searchScratch // the scan's, coarse step's and re-rank's temporaries
	dots   []float32      // [batchTile·coarseSlots] a tile's coarse dot products
	qs     []batchQuery   // [chunk]
	probes []int32        // [chunk·nprobe] each query's lists, nearest first
	pdist  []float32      // [chunk·nprobe] their exact distances
	lut8   []byte         // [chunk·lut8Len(M)] 4-bit codes' tables
	lut    []float32      // [chunk·M·ksub] 8-bit codes' tables
	score  []float32      // [chunk·2·k·Refine] the candidate sets' storage
	row    []uint32       // [chunk·2·k·Refine]
	mrow   []uint32       // [chunk·k] the queries' memos' storage
	mdist  []float32      // [chunk·k]
	count  []int32        // [NList+1] a round's pairs per list, then offsets
	pairs  []int32        // a round's pairs (query·nprobe + position), grouped by list
	keys   []int32        // the pairs in the order they were made
	scan4  *scan4Scratch  // the multi-query 4-bit scan's temporaries
}

func lut8Len(m int) int { return (m + 1) / 2 * 2 * 16 }

// batchQueryBytes estimates one query's state in a chunk.
func (p Params) batchQueryBytes(k, refine, nprobe int) int {
	lut := lut8Len(p.M)
	if p.Bits == 8 {
		lut = 4 * p.M * p.ksub()
	}
	return lut + 2*k*refine*8 + k*8 + nprobe*(4+4+8) + 64
}

func (ix *Index) getBatchScratch() *batchScratch {
	if b, ok := ix.batchPool.Get().(*batchScratch); ok {
		return b
	}
	return &batchScratch{
		s:     ix.getScratch(), // kept with the batch scratch, not returned to ix.scratch
		dots:  make([]float32, batchTile*coarseSlots(ix.p.NList)),
		count: make([]int32, ix.p.NList+1),
		scan4: new(scan4Scratch),
	}
}

// grow sizes b's per-query arrays for nq queries keeping limit
// candidates each, and gives each query's candidate set its share of
// b.score and b.row (its memo's of b.mrow and b.mdist are given at the
// chunk's start): a few allocations when the chunk outgrows the scratch,
// never one per query.
func (b *batchScratch) grow(p Params, nq, nprobe, k, limit int) {
	b.qs = growTo(b.qs, nq)
	b.score = growTo(b.score, nq*2*limit)
	b.row = growTo(b.row, nq*2*limit)
	b.mrow = growTo(b.mrow, nq*k)
	b.mdist = growTo(b.mdist, nq*k)
	for i := range b.qs {
		c := &b.qs[i].cands
		lo, hi := i*2*limit, (i+1)*2*limit
		c.score, c.row = b.score[lo:lo:hi], b.row[lo:lo:hi]
	}
	b.probes = growTo(b.probes, nq*nprobe)
	b.pdist = growTo(b.pdist, nq*nprobe)
	if p.Bits == 4 {
		b.lut8 = growTo(b.lut8, nq*lut8Len(p.M))
	} else {
		b.lut = growTo(b.lut, nq*p.M*p.ksub())
	}
}

func growTo[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// SearchBatch returns, for each of the n = len(qs)/Dim queries stored back
// to back in qs, what Search(q, k, sp, deleted, src) returns: out[i] for
// qs[i·Dim:(i+1)·Dim], the same rows in the same order (ties between
// equal similarities aside). The work is spread over threads goroutines
// (threads <= 1: the caller's) and shared between queries (batch.go):
// the coarse step as one blocked product, each probed list read once for
// all the queries of a chunk that probe it.
//
// Memory: besides the results (one allocation of n·k Neighbors, and the
// slice of n slices), a worker's scratch is pooled per index; a chunk of
// queries holds about Params' batchQueryBytes each, at most
// batchChunkBytes. Safe for concurrent use like Search; each worker holds
// ix.mu shared for one chunk at a time. REQUIRES: the caller does not
// modify qs during the call.
func (ix *Index) SearchBatch(qs []float32, k int, sp SearchParams, deleted *roaring.Bitmap, src VectorSource, threads int) ([][]Neighbor, error) {
	var f Filter
	f.Deleted = deleted
	res, _, err := ix.searchBatch(qs, k, sp, f, false, src, threads)
	return res, err
}

// SearchBatchFiltered is SearchBatch for SearchFiltered: out[i] is what
// SearchFiltered(q, k, sp, f, src) returns for query i, widening included
// (a query that widens is searched alone; BatchStats.Alone counts them).
// f.Match is called from several goroutines when threads > 1.
func (ix *Index) SearchBatchFiltered(qs []float32, k int, sp SearchParams, f Filter, src VectorSource, threads int) ([][]Neighbor, BatchStats, error) {
	return ix.searchBatch(qs, k, sp, f, true, src, threads)
}

// batchRun is one batch search: its settings and results, shared by its
// workers, and the workers' coordination. One allocation per batch.
type batchRun struct {
	ix                *Index
	qs                []float32
	k, nprobe, refine int
	factor            float32
	sp                SearchParams
	f                 Filter
	fp                *Filter // &f when it filters anything, else nil
	widen             bool    // SearchFiltered's semantics
	src               VectorSource
	out               [][]Neighbor
	flat              []Neighbor // the results' storage, k per query
	chunk, nchunks    int
	jobs              []rerankJob  // [nchunks] the chunks' re-rank phases (batchrerank.go)
	jobsBuf           [4]rerankJob // jobs' storage when there are few
	jobMu             sync.Mutex   // guards each job's state
	jobCond           sync.Cond    // a job's state changed; L is &jobMu

	next   atomic.Int64 // the next chunk to take
	failed atomic.Bool  // a chunk failed: take no more
	wg     sync.WaitGroup
	mu     sync.Mutex // guards first and st
	first  error
	st     BatchStats
}

func (ix *Index) searchBatch(qs []float32, k int, sp SearchParams, f Filter, widen bool, src VectorSource, threads int) ([][]Neighbor, BatchStats, error) {
	p := ix.p
	if len(qs)%p.Dim != 0 {
		return nil, BatchStats{}, fmt.Errorf("%w: %d query values are not whole queries of %d dimensions", ErrBadParams, len(qs), p.Dim)
	}
	n := len(qs) / p.Dim
	factor, err := ix.pruneFactor(src, sp)
	if err != nil {
		return nil, BatchStats{}, err
	}
	if k <= 0 {
		return make([][]Neighbor, n), BatchStats{}, nil
	}
	if n == 0 {
		return [][]Neighbor{}, BatchStats{}, nil
	}
	r := &batchRun{ix: ix, qs: qs, k: k, sp: sp, f: f, widen: widen, src: src, factor: factor}
	r.nprobe = sp.NProbe
	if r.nprobe <= 0 {
		r.nprobe = DefaultNProbe(p.NList)
	}
	r.nprobe = min(r.nprobe, p.NList)
	r.refine = sp.Refine
	if r.refine <= 0 {
		r.refine = DefaultRefine(p.Bits)
	}
	if r.f.Deleted != nil && r.f.Deleted.IsEmpty() {
		r.f.Deleted = nil
	}
	if r.f.Deleted != nil || r.f.Allow != nil || r.f.Match != nil {
		r.fp = &r.f
	}
	r.out = make([][]Neighbor, n)
	r.flat = make([]Neighbor, n*k)
	threads = max(1, min(threads, n))
	r.chunk = (n + threads - 1) / threads
	r.chunk = max(1, min(r.chunk, batchMaxChunk, batchChunkBytes/p.batchQueryBytes(k, r.refine, r.nprobe)))
	r.nchunks = (n + r.chunk - 1) / r.chunk
	threads = min(threads, r.nchunks)
	r.initJobs()
	var perm []int32
	if r.nchunks > 1 {
		// Each chunk a slab of the space (batchorder.go).
		if perm = ix.batchOrder(qs, n); perm != nil {
			r.qs = permuteQueries(qs, p.Dim, perm)
		}
	}
	if threads == 1 {
		r.work()
	} else {
		r.wg.Add(threads)
		for range threads {
			go r.worker()
		}
		r.wg.Wait()
	}
	if r.first != nil {
		return nil, r.st, r.first
	}
	if perm != nil {
		out := make([][]Neighbor, n)
		for j, i := range perm {
			out[i] = r.out[j]
		}
		return out, r.st, nil
	}
	return r.out, r.st, nil
}

// worker is work on a goroutine of its own.
func (r *batchRun) worker() {
	defer r.wg.Done()
	r.work()
}

// work searches chunks until none is left or one fails.
func (r *batchRun) work() {
	ix := r.ix
	b := ix.getBatchScratch()
	defer ix.batchPool.Put(b)
	n := len(r.out)
	for !r.failed.Load() {
		c := int(r.next.Add(1)) - 1
		if c >= r.nchunks {
			// Every chunk is taken: help those still re-ranking.
			r.helpRerank(b.s)
			return
		}
		lo, hi := c*r.chunk, min((c+1)*r.chunk, n)
		job := &r.jobs[c]
		job.lo, job.n = lo, hi-lo
		st, err := ix.batchChunk(r, job, b, r.out[lo:hi], r.flat[lo*r.k:hi*r.k])
		r.setJobState(job, jobOver)
		r.mu.Lock()
		r.st.Alone += st.Alone
		r.st.Damaged = r.st.Damaged || st.Damaged
		if err != nil && r.first == nil {
			r.first = err
			r.failed.Store(true)
		}
		r.mu.Unlock()
	}
}

// batchChunk searches job's queries of r: under ix.mu those that can be
// searched together, then alone those that cannot (see above). out and
// flat are the chunk's share of the results.
func (ix *Index) batchChunk(r *batchRun, job *rerankJob, b *batchScratch, out [][]Neighbor, flat []Neighbor) (BatchStats, error) {
	lo := job.lo
	var st BatchStats
	ix.mu.RLock()
	if ix.closed {
		ix.mu.RUnlock()
		return st, ErrClosed
	}
	err := ix.batchChunkLocked(r, job, b, out, flat)
	ix.mu.RUnlock()
	if err != nil {
		return st, err
	}
	dim := ix.p.Dim
	for i := range b.qs {
		if !b.qs[i].alone {
			continue
		}
		st.Alone++
		q := r.qs[(lo+i)*dim : (lo+i+1)*dim]
		var res []Neighbor
		if r.widen {
			var sst SearchStats
			res, sst, err = ix.SearchFiltered(q, r.k, r.sp, r.f, r.src)
			st.Damaged = st.Damaged || sst.Damaged
		} else {
			st.Damaged = true // only a damaged list sends a Search query here
			res, err = ix.Search(q, r.k, r.sp, r.f.Deleted, r.src)
		}
		if err != nil {
			return st, err
		}
		out[i] = flat[i*r.k : i*r.k+copy(flat[i*r.k:(i+1)*r.k], res)]
	}
	return st, nil
}

// batchChunkLocked searches job's queries of r together, leaving
// b.qs[i].alone set for those to be searched alone.
// REQUIRES: ix.mu held for reading.
func (ix *Index) batchChunkLocked(r *batchRun, job *rerankJob, b *batchScratch, out [][]Neighbor, flat []Neighbor) error {
	p := ix.p
	lo, hi := job.lo, job.lo+job.n
	dim, nprobe, nq := p.Dim, r.nprobe, hi-lo
	qs := r.qs[lo*dim : hi*dim]
	b.grow(p, nq, nprobe, r.k, r.k*r.refine)
	s := b.s
	l8, lf := lut8Len(p.M), p.M*p.ksub()

	// 1. The coarse step and the tables, a tile of queries at a time.
	slots := coarseSlots(p.NList)
	for t0 := 0; t0 < nq; t0 += batchTile {
		t1 := min(t0+batchTile, nq)
		simd.DotBlockedF16Multi(qs[t0*dim:t1*dim], dim, ix.coarseBlk16, slots, b.dots)
		for i := t0; i < t1; i++ {
			q := qs[i*dim : (i+1)*dim]
			ix.probesFromDotsLocked(q, b.dots[(i-t0)*slots:(i-t0+1)*slots], nprobe, s)
			for j, l := range s.probeOrder {
				b.probes[i*nprobe+j] = int32(l)
				b.pdist[i*nprobe+j] = s.coarseDist[l]
			}
			bq := &b.qs[i]
			bq.q4 = ix.buildLUT(q, s)
			if p.Bits == 4 {
				copy(b.lut8[i*l8:(i+1)*l8], s.lut8)
			} else {
				copy(b.lut[i*lf:(i+1)*lf], s.lut)
			}
			bq.cands.reset(r.k*r.refine, &s.sel) // this worker's, as the chunk is
			bq.memo.reset(b.mrow[i*r.k:(i+1)*r.k], b.mdist[i*r.k:(i+1)*r.k])
			bq.qq = s.qq
			bq.bound = float32(math.Inf(1))
			bq.skipped = 0
			bq.alone = false
		}
	}

	// 2. The probed lists, in rounds of positions [0, 1), [1, 8), [8, 16),
	// [16, 32), …: each query's nearest list first, and its candidates cut
	// after the first round that leaves them more than their limit.
	prune := r.factor != 0 && nprobe > pruneFirst
	scale := pruneScale(r.factor)
	for p0 := 0; p0 < nprobe; {
		p1 := roundEnd(p0, nprobe)
		if err := ix.batchRoundLocked(r, qs, b, p0, p1, prune, scale); err != nil {
			return err
		}
		for i := range b.qs {
			if c := &b.qs[i].cands; !c.cut {
				c.settle() // its first cut: the next round's pushes meet a bound
			}
		}
		p0 = p1
	}

	// 3. Re-rank, each query's window of prefetched rows running on into
	// the next query's first rows, shared with the workers whose chunks
	// are done (batchrerank.go).
	ix.rerankChunkLocked(r, job, b, qs, out, flat)
	return nil
}

// roundEnd returns the end of the round of probe positions that starts at
// p0 (see "Why rounds" above): [0, 1), [1, pruneFirst), then each up to
// twice its start, so that every refresh position pruneFirst·2^j starts a
// round.
func roundEnd(p0, nprobe int) int {
	switch {
	case p0 == 0:
		return min(1, nprobe)
	case p0 < pruneFirst:
		return min(pruneFirst, nprobe)
	}
	return min(2*p0, nprobe)
}

// batchRoundLocked scans probe positions [p0, p1) of every query of the
// chunk not searched alone: it refreshes each query's pruning bound when
// p0 is one of Search's refresh positions (prune), decides each skip as
// Search does, and scans the remaining (query, list) pairs list by list.
// REQUIRES: ix.mu held for reading.
func (ix *Index) batchRoundLocked(r *batchRun, qs []float32, b *batchScratch, p0, p1 int, prune bool, scale float32) error {
	p := ix.p
	dim, nprobe := p.Dim, r.nprobe
	s := b.s
	clear(b.count)
	keys := b.keys[:0]
	for i := range b.qs {
		bq := &b.qs[i]
		if bq.alone {
			continue
		}
		q := qs[i*dim : (i+1)*dim]
		if prune && p0 >= pruneFirst {
			bq.bound = min(bq.bound, ix.kthExactLocked(q, r.k, r.src, &bq.cands, &bq.memo, s))
		}
		c1, d1 := int(b.probes[i*nprobe]), b.pdist[i*nprobe]
		for j := p0; j < p1; j++ {
			pi := i*nprobe + j
			l := int(b.probes[pi])
			if prune && j >= pruneFirst && ix.pruned(l, b.pdist[pi], c1, d1, bq.qq, bq.bound, scale) {
				if r.factor < 1 {
					bq.skipped++
				}
				continue
			}
			keys = append(keys, int32(pi))
			b.count[l+1]++
		}
	}
	b.keys = keys
	// Counting sort of the pairs by list: count[l] becomes list l's first
	// pair.
	for l := 1; l <= p.NList; l++ {
		b.count[l] += b.count[l-1]
	}
	b.pairs = growTo(b.pairs, len(keys))
	pos := b.count[:p.NList] // advanced as pairs are placed; count[l+1] is then list l's end
	for _, pi := range keys {
		l := b.probes[pi]
		b.pairs[pos[l]] = pi
		pos[l]++
	}
	// Now count[l] is list l's end, and its start the end of list l−1.
	lf := p.M * p.ksub()
	start := int32(0)
	next := nextList(b.count, 0, p.NList)
	for l := next; l < p.NList; l = next {
		end := b.count[l]
		group := b.pairs[start:end]
		start = end
		next = nextList(b.count, l+1, p.NList)
		if next < p.NList {
			ix.prefetchList(next)
		}
		if err := ix.checkList(l); err != nil {
			if r.src == nil {
				return err
			}
			for _, pi := range group {
				b.qs[int(pi)/nprobe].alone = true
			}
			continue
		}
		base := &ix.lists[l].base
		if p.Bits == 4 {
			ix.scanGroup4Locked(r, qs, b, l, base, group)
			continue
		}
		for _, pi := range group {
			i := int(pi) / nprobe
			bq := &b.qs[i]
			if bq.alone {
				continue
			}
			q := qs[i*dim : (i+1)*dim]
			ix.scanListLocked(q, l, base, ix.listBias(q, l, b.pdist[pi]), bq.q4, b.lut[i*lf:(i+1)*lf], nil, r.fp, &bq.cands, s)
		}
	}
	return nil
}

// scanGroup4Locked scans list l (4-bit codes, its base segment base) for
// the round's pairs group that probe it, up to simd.FastScanMaxQueries
// queries at a time (simd.FastScan4Multi reads each chunk of codes once
// for all of them). REQUIRES: ix.mu held for reading; list l checked.
func (ix *Index) scanGroup4Locked(r *batchRun, qs []float32, b *batchScratch, l int, base *segment, group []int32) {
	dim, nprobe, l8 := ix.p.Dim, r.nprobe, lut8Len(ix.p.M)
	var batch [simd.FastScanMaxQueries]scan4Query
	n := 0
	for gi, pi := range group {
		i := int(pi) / nprobe
		if bq := &b.qs[i]; !bq.alone {
			q := qs[i*dim : (i+1)*dim]
			batch[n] = scan4Query{q4: bq.q4, lut8: b.lut8[i*l8 : (i+1)*l8], bias: ix.listBias(q, l, b.pdist[pi]), c: &bq.cands}
			n++
		}
		if n == len(batch) || (n > 0 && gi == len(group)-1) {
			ix.scanList4MultiLocked(l, base, batch[:n], r.fp, b.scan4)
			n = 0
		}
	}
}

// nextList returns the first list from l on with pairs in the round,
// whose ends are count (count[l] > count[l−1], the end of list −1 being
// 0), or nlist when there is none.
func nextList(count []int32, l, nlist int) int {
	prev := int32(0)
	if l > 0 {
		prev = count[l-1]
	}
	for ; l < nlist; l++ {
		if count[l] > prev {
			return l
		}
	}
	return nlist
}
