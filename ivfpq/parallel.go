package ivfpq

import "sync"

// parallelFor splits [0, n) into at most workers contiguous ranges and runs
// fn on each in its own goroutine, returning when all are done. With one
// worker (or a tiny n) it runs fn inline.
func parallelFor(n, workers int, fn func(w, lo, hi int)) {
	if workers < 1 {
		workers = 1
	}
	if workers > n {
		workers = n
	}
	if workers <= 1 {
		if n > 0 {
			fn(0, 0, n)
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
