package engine

import (
	"context"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
)

// A filtered retrieval in bounded steps (steps.go).
//
// Phase 1 evaluates a filter lazily: only on the rows good enough to
// enter the candidates, which for a cheap or unselective filter is a
// small share of the rows, all under one hold of the read lock. An
// expensive filter (a few KiB of expression) or a selective one (the
// search goes on checking until K1 rows pass) can make that hold last
// seconds. So phase 1 times its filter: every filterSample-th evaluation
// is timed, and once the evaluations are estimated to have cost a step,
// the lazy search is abandoned. The filter is then evaluated on every
// candidate memory in steps (eachMatchStepsLocked), releasing the lock
// between them, and phase 1 runs again under the last step's lock over
// the rows that matched (SearchOptions.Allow), with no filter to
// evaluate. A cheap filter never takes the second route: its retrieval
// is as before.
//
// The second route returns what the first would have on an exact
// (FLAT) collection when nothing is written meanwhile: the K1 most
// similar live rows among those that match. On an IVF index the probe
// count is then scaled by the matching share counted, not estimated, and
// approximate results may differ as between any two probe counts. A
// memory whose attributes change during the retrieval is judged on its
// attributes when its step examined them; one added meanwhile is not a
// candidate; one deleted meanwhile is not returned.

// filterSample is how often phase 1 times an evaluation of the filter
// (a power of two): the estimate of the filter's total cost is the timed
// evaluations' cost times filterSample.
const filterSample = 64

// filterClock estimates the time phase 1 spends in its Match.
type filterClock struct {
	limit time.Duration // the cost that abandons the lazy search
	calls int
	spent time.Duration // estimated
	over  bool          // spent reached limit: Match rejects every row
}

// wrap returns match, timed. Once over, it rejects every row without
// evaluating it, so that the search ends quickly (its result is
// discarded).
func (fc *filterClock) wrap(match func(row uint32) bool) func(row uint32) bool {
	return func(row uint32) bool {
		if fc.over {
			return false
		}
		fc.calls++
		if fc.calls&(filterSample-1) != 0 {
			return match(row)
		}
		t := time.Now()
		ok := match(row)
		fc.spent += filterSample * time.Since(t)
		if fc.spent >= fc.limit {
			fc.over = true
		}
		return ok
	}
}

// phase1StepsLocked runs phase 1 of a retrieval of q (checked) with opt at
// now, lazily when the filter is cheap, in steps otherwise (see above).
// REQUIRES: c.mu held for reading. It is held on a nil error return (the
// caller must re-read state: it may have been released meanwhile; the
// candidates are rows of the numbering in force at return), not held on
// an error.
func (c *Collection) phase1StepsLocked(ctx context.Context, q []float32, opt RetrieveOptions, now int64) ([]candidate, error) {
	so := c.phase1OptionsLocked(opt, now)
	_, flat := c.index.(exactScan)
	if (flat || so.Path == PathExact) && (so.Allow == nil || !iterateAllowed(so.Allow.GetCardinality(), int(c.vecs.nrows))) {
		// Every exact scan of every row, filtered or not, in steps: at
		// 1M rows one lasts tens to hundreds of milliseconds. One that
		// fits in a step takes the lock once, as exactSearch would.
		return c.exactStepsLocked(ctx, q, opt, so, now)
	}
	var fc *filterClock
	if opt.Filter != nil && so.Match != nil {
		fc = &filterClock{limit: time.Duration(stepTimeNanos.Load())}
		so.Match = fc.wrap(so.Match)
	}
	cands, err := c.index.search(q, so)
	if err != nil {
		c.mu.RUnlock()
		return nil, err
	}
	if fc == nil || !fc.over {
		return cands, nil
	}
	for {
		gen := c.gen
		rows := roaring.New()
		p := c.planLocked(opt.Filter)
		err := c.eachMatchStepsLocked(ctx, p, rows.Clear, func(id uint64) { rows.Add(c.mems[id].row) })
		if err != nil {
			return nil, err
		}
		if c.gen != gen {
			continue // rows were renumbered between steps: again (compactions are rare)
		}
		so := opt.SearchOptions
		if so.Allow != nil {
			rows.And(so.Allow)
		}
		so.Allow = rows
		if len(c.expiring) > 0 {
			now := c.db.nowNanos()
			so.Match = func(row uint32) bool { return !c.mems[c.rowIDs[row]].expiredAt(now) }
			if prev := opt.Match; prev != nil {
				so.Match = func(row uint32) bool { return prev(row) && !c.mems[c.rowIDs[row]].expiredAt(now) }
			}
		}
		cands, err := c.index.search(q, so)
		if err != nil {
			c.mu.RUnlock()
			return nil, err
		}
		return cands, nil
	}
}

// exactStepsLocked is the exact scan of phase 1 (exactSearch), filtered
// or not, in steps: rows [0, n) as they are at the start, a few batches a
// step, the heap of the best kept across steps. What it sees of writes
// between steps: rows added are not visited; a row deleted before its
// batch is skipped, and one deleted after it had entered the heap makes
// the scan start again (twice at most; after that such rows are dropped
// and the result may be short by as many); a compaction (rows
// renumbered) makes it start again; a memory whose attributes change is
// judged on those its batch (or, for the indexed fields, the plan at the
// start) saw. With no write meanwhile it returns what exactSearch does.
// REQUIRES: as phase1StepsLocked; so is phase1OptionsLocked(opt, now).
func (c *Collection) exactStepsLocked(ctx context.Context, q []float32, opt RetrieveOptions, so SearchOptions, now int64) ([]candidate, error) {
	st := newStepper(ctx, c)
	dim, metric := c.dim(), c.cfg.Metric
	// How many values to score between two readings of the clock: a
	// batch's worth when a filter may be evaluated on every row (an
	// expensive one costs microseconds a row), stepCheckValues otherwise,
	// so that a small dimension does not pay a clock reading per batch.
	every := int(stepCheckValues.Load())
	if so.filtered() {
		every = 1
	}
	for attempt := 0; ; attempt++ {
		gen := c.gen
		n := len(c.vecs.rows()) / dim
		h := make(minHeap, 0, so.K1)
		restart := false
		since := 0 // values scored since the clock was last read
		for lo := 0; lo < n; lo += scanBatch {
			if since >= every {
				since = 0
				if st.due() {
					if err := st.yieldLocked(); err != nil {
						return nil, err
					}
					if c.gen != gen {
						restart = true
						break
					}
				}
			}
			// rows() is read again after every step: an add may have
			// grown (moved) the mapping; rows [0, n) are unchanged.
			exactSearchRange(&h, c.vecs.rows(), dim, metric, c.dead, q, so, lo, min(lo+scanBatch, n))
			since += scanBatch * dim
		}
		if restart {
			so = c.phase1OptionsLocked(opt, now) // the plan's rows, renumbered
			continue
		}
		out := []candidate(h)
		kept := out[:0]
		for _, cd := range out {
			if !c.dead.Contains(cd.row) {
				kept = append(kept, cd)
			}
		}
		if len(kept) < len(out) && attempt < 2 {
			continue // a candidate was deleted after its step: its place may be another's
		}
		sortCandidates(kept)
		return kept, nil
	}
}
