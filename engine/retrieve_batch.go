package engine

import (
	"context"
	"fmt"
	"sync"
)

// MaxBatchQueries bounds the queries of one RetrieveBatch: a batch is a
// step's worth of episodes or a benchmark's query set, and its results
// (up to K2 each) are held in memory together.
const MaxBatchQueries = 100000

// RetrieveBatch runs a two-phase retrieval (RetrieveContext) for each of
// queries with the same options and returns their results in order:
// out[i] is what RetrieveContext(ctx, queries[i], opt) returns. Phase 2
// is per query, as Retrieve's.
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
	out := make([][]Result, len(qs))
	err := forEachQuery(len(qs), threads, func(i int) error {
		r, err := c.RetrieveContext(ctx, qs[i], opt)
		out[i] = r
		return err
	})
	if err != nil {
		return nil, err
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
