package ivfpq

import "sync"

// parallelFor splits [0, n) into at most workers contiguous ranges and runs
// fn on each in its own goroutine, returning when all are done. With one
// worker (or a tiny n) it runs fn inline.
func parallelFor(n, workers int, fn func(w, lo, hi int)) { parallelForPaced(n, workers, nil, fn) }

// paceBlock is how many items a paced loop runs between calls of its pace
// function: small enough that a block takes well under a pacer's busy slice
// (an item is at most a vector's assignment to every coarse centroid, tens
// of microseconds), large enough that calling pace costs nothing.
const paceBlock = 16

// parallelForPaced is parallelFor that, when it runs on one worker and
// pace is not nil, runs fn on blocks of paceBlock items and calls pace
// between them: a build on a machine's only processor lets it sleep there,
// so that requests get the processor back within a slice instead of at the
// Go scheduler's 10 ms preemption. With more workers pace is not called
// (callers leave a processor free instead), so it need not be safe for
// concurrent use. fn must accept being called more than once per worker
// with consecutive ranges.
func parallelForPaced(n, workers int, pace func(), fn func(w, lo, hi int)) {
	if workers < 1 {
		workers = 1
	}
	if workers > n {
		workers = n
	}
	if workers <= 1 {
		if pace == nil {
			if n > 0 {
				fn(0, 0, n)
			}
			return
		}
		for lo := 0; lo < n; lo += paceBlock {
			fn(0, lo, min(lo+paceBlock, n))
			pace()
		}
		return
	}
	var wg sync.WaitGroup
	step := (n + workers - 1) / workers
	for w := 0; w < workers; w++ {
		lo, hi := w*step, min((w+1)*step, n)
		if lo >= hi {
			break
		}
		wg.Add(1)
		go func(w, lo, hi int) {
			defer wg.Done()
			fn(w, lo, hi)
		}(w, lo, hi)
	}
	wg.Wait()
}
