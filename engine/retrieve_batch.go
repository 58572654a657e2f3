package engine

import (
	"context"
	"fmt"
	"math"
	"sync"

	"github.com/memrl/memrl/ivfpq"
)

// MaxBatchQueries bounds the queries of one RetrieveBatch: a batch is a
// step's worth of episodes or a benchmark's query set, and its results
// (up to K2 each) are held in memory together.
const MaxBatchQueries = 100000

// batchLockQueries is how many queries of a batch one hold of the
// collection's read lock covers (writers wait for it): at 1M rows a query
// is 50–200 µs of one core's work, so a hold of 1,024 on two workers is
// tens of milliseconds, as a filtered retrieval's step is.
const batchLockQueries = 1024

// RetrieveBatch runs a two-phase retrieval (RetrieveContext) for each of
// queries with the same options and returns their results in order:
// out[i] is what RetrieveContext(ctx, queries[i], opt) returns. Phase 2
// is per query, as Retrieve's.
//
// On a collection with an IVF index and no filter (FILTER, Allow or
// Match), phase 1 of all the queries is one ivfpq batch search
// (SearchBatchFiltered: the coarse step as a blocked product, each probed
// list scanned once for all the queries that probe it), under one hold of
// the read lock per batchLockQueries queries; otherwise, and on a FLAT
// collection, each query is retrieved as by RetrieveContext, on threads
// goroutines. The results are the same either way.
//
// threads is how many goroutines share the work; threads <= 1 runs it on
// the caller's. A server answering many clients passes 1 (its clients
// already keep the cores busy); a lone caller with a large batch passes
// the cores it may use.
//
// Every query is checked before any is searched: a query of the wrong
// dimension or with a non-finite component fails the whole call, with an
// error naming its position, and nothing is searched. Errors of the search
// itself (a dropped collection, ctx done) fail the whole call too; the
// results of the other queries are then discarded. REQUIRES: the caller
// does not modify queries during the call.
func (c *Collection) RetrieveBatch(ctx context.Context, queries [][]float32, opt RetrieveOptions, threads int) ([][]Result, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	if len(queries) > MaxBatchQueries {
		return nil, fmt.Errorf("%w: %d queries in one batch, at most %d", ErrBadParam, len(queries), MaxBatchQueries)
	}
	qs := make([][]float32, len(queries))
	for i, v := range queries {
		q, err := c.checkVector(v)
		if err != nil {
			return nil, fmt.Errorf("query %d: %w", i, err)
		}
		qs[i] = q
	}
	if len(qs) == 0 {
		return [][]Result{}, nil
	}
	if err := checkCtx(c, ctx); err != nil {
		return nil, err
	}
	if opt.Filter == nil && opt.Allow == nil && opt.Match == nil && opt.Path != PathExact {
		return c.retrieveBatchIVF(ctx, qs, opt, threads)
	}
	return c.retrieveEach(ctx, qs, opt, threads)
}

// retrieveEach is RetrieveBatch one query at a time: RetrieveContext for
// each of qs (checked, so not checked again: retrieveChecked) on threads
// goroutines.
func (c *Collection) retrieveEach(ctx context.Context, qs [][]float32, opt RetrieveOptions, threads int) ([][]Result, error) {
	out := make([][]Result, len(qs))
	err := forEachQuery(len(qs), threads, func(i int) error {
		r, err := c.retrieveChecked(ctx, qs[i], opt)
		out[i] = r
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// retrieveBatchIVF is RetrieveBatch of qs (checked) without a filter:
// batchLockQueries queries at a time under the read lock, phase 1 one
// ivfpq batch search when the collection has an index (as
// ivfPhase1.search runs it for one query, damage handling included),
// then phase 2 per query.
func (c *Collection) retrieveBatchIVF(ctx context.Context, qs [][]float32, opt RetrieveOptions, threads int) ([][]Result, error) {
	out := make([][]Result, len(qs))
	var flat []float32
	for lo := 0; lo < len(qs); lo += batchLockQueries {
		hi := min(lo+batchLockQueries, len(qs))
		if lo > 0 {
			if err := checkCtx(c, ctx); err != nil {
				return nil, err
			}
		}
		if err := c.rlockLive(); err != nil {
			return nil, err
		}
		ip, ok := c.index.(ivfPhase1)
		if !ok {
			c.mu.RUnlock()
			res, err := c.retrieveEach(ctx, qs[lo:hi], opt, threads)
			if err != nil {
				return nil, err
			}
			copy(out[lo:hi], res)
			continue
		}
		flat = flat[:0]
		for _, q := range qs[lo:hi] {
			flat = append(flat, q...)
		}
		cands, err := c.phase1BatchLocked(ip, flat, hi-lo, opt, threads)
		if err != nil {
			c.mu.RUnlock()
			if isIndexDamage(err) {
				// Damage the index could not search around: answer
				// one by one (exactly, as Retrieve does), and have
				// the index rebuilt.
				c.indexDamaged(ip.ix, err)
				res, err := c.retrieveEach(ctx, qs[lo:hi], opt, threads)
				if err != nil {
					return nil, err
				}
				copy(out[lo:hi], res)
				continue
			}
			return nil, err
		}
		for i, cd := range cands {
			if out[lo+i], err = c.phase2Locked(cd, opt); err != nil {
				c.mu.RUnlock()
				return nil, err
			}
		}
		c.mu.RUnlock()
	}
	return out, nil
}

// phase1BatchLocked is ivfPhase1.search for n queries stored back to back
// in flat, without Allow, through one ivfpq batch search on threads
// workers. REQUIRES: c.mu held for reading.
func (c *Collection) phase1BatchLocked(ip ivfPhase1, flat []float32, n int, opt RetrieveOptions, threads int) ([][]candidate, error) {
	so := c.phase1OptionsLocked(opt, c.db.nowNanos())
	f := ivfpq.Filter{Deleted: c.dead, Match: so.Match}
	if opt.HasDelta {
		// As ivfPhase1.search: the float32 Delta rounded up.
		f.MinSim, f.HasMinSim = float32(opt.Delta), true
		if float64(f.MinSim) < opt.Delta {
			f.MinSim = math.Nextafter32(f.MinSim, float32(math.Inf(1)))
		}
	}
	sp := ivfpq.SearchParams{NProbe: so.NProbe, Refine: so.Refine, PruneFactor: float32(so.Stop)}
	res, st, err := ip.ix.SearchBatchFiltered(flat, so.K1, sp, f, c.vecs, threads)
	if err != nil {
		return nil, err
	}
	if st.Damaged && c.damage.bad.Load() != ip.ix {
		// A list a query probed is damaged, and was searched around:
		// have the index rebuilt (index_damage.go).
		c.indexDamaged(ip.ix, ip.ix.Verify())
	}
	out := make([][]candidate, n)
	all := make([]candidate, 0, n*so.K1)
	for i, r := range res {
		start := len(all)
		for _, nb := range r {
			if opt.HasDelta && float64(nb.Sim) < opt.Delta {
				continue // cannot happen (MinSim >= Delta), as in ivfPhase1.search
			}
			all = append(all, candidate{row: nb.Row, sim: nb.Sim})
		}
		out[i] = all[start:len(all):len(all)]
	}
	return out, nil
}

// forEachQuery calls fn(i) for i in [0, n) on at most threads goroutines
// (the caller's alone when threads <= 1) and returns the first error; after
// an error the remaining queries are not started.
func forEachQuery(n, threads int, fn func(i int) error) error {
	threads = max(1, min(threads, n))
	if threads == 1 {
		for i := range n {
			if err := fn(i); err != nil {
				return err
			}
		}
		return nil
	}
	var (
		mu    sync.Mutex // guards next and first
		next  int
		first error
		wg    sync.WaitGroup
	)
	take := func() (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if first != nil || next >= n {
			return 0, false
		}
		next++
		return next - 1, true
	}
	for range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i, ok := take()
				if !ok {
					return
				}
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}
