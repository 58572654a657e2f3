package engine

import (
	"context"
	"time"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/memrl/memrl/engine/filter"
	"github.com/memrl/memrl/wal"
)

// Commands by filter: counting, deleting and scanning the memories whose
// attributes match an expression (package filter). Each narrows the rows
// with the indexed fields' bitmaps when it can (filter.Index.Plan), and
// evaluates the expression on the attributes of the rows left unless the
// plan is exact. Expired memories never match.

// filterPlan is how one expression is evaluated over a collection.
type filterPlan struct {
	e *filter.Expr
	// rows, when not nil, holds every live row that can match (and perhaps
	// others); nil means any live row can.
	rows *roaring.Bitmap
	// exact: every row of rows matches, unless expired (no Match needed).
	exact bool
}

// planLocked narrows e with the attribute index.
// REQUIRES: c.mu held (for reading at least); recovery done.
func (c *Collection) planLocked(e *filter.Expr) filterPlan {
	p := filterPlan{e: e}
	if c.fidx != nil && len(c.indexed) > 0 {
		if rows, exact, ok := c.fidx.Plan(e); ok {
			p.rows, p.exact = rows, exact
		}
	}
	return p
}

// matchLocked reports whether memory m matches the plan's expression and
// has not expired by now.
// REQUIRES: c.mu held (for reading at least).
func (c *Collection) matchLocked(p filterPlan, m memory, now int64) bool {
	if m.expiredAt(now) {
		return false
	}
	return p.exact || p.e.Match(m.attrs())
}

// eachMatchLocked calls fn with the id of every live memory matching p, in
// no particular order, until fn returns false.
// REQUIRES: c.mu held (for reading at least).
func (c *Collection) eachMatchLocked(p filterPlan, now int64, fn func(id uint64) bool) {
	if p.rows != nil {
		it := p.rows.Iterator()
		for it.HasNext() {
			row := it.Next()
			if int(row) >= len(c.rowIDs) || c.dead.Contains(row) {
				continue
			}
			id := c.rowIDs[row]
			if m, ok := c.mems[id]; ok && m.row == row && c.matchLocked(p, m, now) && !fn(id) {
				return
			}
		}
		return
	}
	for id, m := range c.mems {
		if c.matchLocked(p, m, now) && !fn(id) {
			return
		}
	}
}

// CountFilter is CountFilterContext without a deadline.
func (c *Collection) CountFilter(e *filter.Expr) (int, error) {
	return c.CountFilterContext(context.Background(), e)
}

// deleteChunk bounds the ids of one delete record written by Prune (8
// MiB of ids, well below wal.MaxRecordSize).
const deleteChunk = 1 << 20

// deleteStep bounds the memories one batch of DeleteFilterContext
// deletes under one hold of the write lock (with stepTimeNanos: the
// filter is evaluated again on each), so that a delete of a million
// memories lets other writers and readers in every millisecond or so.
const deleteStep = 1024

// DeleteFilterDeferred is DeleteFilterContext without a deadline.
func (c *Collection) DeleteFilterDeferred(e *filter.Expr) (int, Ticket, error) {
	return c.DeleteFilterContext(context.Background(), e)
}

// DeleteFilterContext deletes every live memory whose attributes match e
// and returns how many, and the ticket to wait for before acknowledging.
//
// It works in two stages, neither holding a lock for long. First it
// evaluates e under the read lock, in bounded steps (eachMatchStepsLocked),
// collecting the ids that match: an expensive filter matching nothing
// never takes the write lock at all. When ctx is done during this stage
// the error wraps ctx.Err() and nothing is deleted. Then it deletes those
// ids in batches of at most deleteStep, each under one hold of the write
// lock, evaluating e again on each memory (one deleted or no longer
// matching meanwhile is skipped); once begun, this stage runs to its end,
// whatever ctx.
//
// So a memory live and matching throughout the call is deleted; one
// added, or changed to match, during the call may or may not be; one
// changed not to match before its batch is not. Each batch is logged as
// one ordinary delete record: a crash before the ticket is durable may
// keep some batches and not others (as it may of a pipeline of
// MEM.DELs), never part of one.
func (c *Collection) DeleteFilterContext(ctx context.Context, e *filter.Expr) (int, Ticket, error) {
	if err := checkCtx(c, ctx); err != nil {
		return 0, 0, err
	}
	if err := c.rlockLive(); err != nil {
		return 0, 0, err
	}
	var ids []uint64
	err := c.eachMatchStepsLocked(ctx, c.planLocked(e), func() { ids = ids[:0] }, func(id uint64) { ids = append(ids, id) })
	if err != nil {
		return 0, 0, err // the lock is released
	}
	c.mu.RUnlock()
	n := 0
	var last Ticket
	for len(ids) > 0 {
		done, lsn, err := c.deleteMatchingStep(e, ids)
		if err != nil {
			return n, last, err
		}
		n, ids = n+done.deleted, ids[done.examined:]
		if lsn != 0 {
			last = Ticket(lsn)
		}
	}
	return n, last, nil
}

// deleteStepResult is what one deleteMatchingStep did.
type deleteStepResult struct {
	examined int // ids of the front of the list dealt with
	deleted  int
}

// deleteMatchingStep deletes, under one hold of the write lock, those of
// the first ids that are live and still match e, examining ids until
// deleteStep are to be deleted or the step has lasted its time. The lsn
// is 0 when it deleted none.
func (c *Collection) deleteMatchingStep(e *filter.Expr, ids []uint64) (deleteStepResult, wal.LSN, error) {
	if err := c.lockLive(); err != nil {
		return deleteStepResult{}, 0, err
	}
	defer c.mu.Unlock()
	start, limit := time.Now(), time.Duration(stepTimeNanos.Load())
	now := c.db.nowNanos()
	var del []uint64
	i := 0
	for ; i < len(ids) && len(del) < deleteStep; i++ {
		if i > 0 && i%stepCheck == 0 && time.Since(start) >= limit {
			break
		}
		id := ids[i]
		if m, ok := c.mems[id]; ok && !m.expiredAt(now) && e.Match(m.attrs()) {
			del = append(del, id)
		}
	}
	if len(del) == 0 {
		return deleteStepResult{examined: i}, 0, nil
	}
	lsn, err := c.deleteIDsLocked(del)
	if err != nil {
		return deleteStepResult{}, 0, err
	}
	return deleteStepResult{examined: i, deleted: len(del)}, lsn, nil
}

// DeleteFilter is DeleteFilterDeferred, waiting until the deletes are
// durable.
func (c *Collection) DeleteFilter(e *filter.Expr) (int, error) {
	n, t, err := c.DeleteFilterDeferred(e)
	if err != nil {
		return n, err
	}
	return n, c.db.WaitDurable(t)
}

// shareSample bounds the memories estimateShareLocked evaluates: about a
// millisecond of attribute matching, a few percent of what an unindexed
// filtered search costs at 1M, and enough to tell 1% from 20% (a share s
// is estimated within about ±√(s/shareSample)).
const shareSample = 1024

// estimateShareLocked estimates the share of the live rows whose memory
// matches p, by evaluating it on up to shareSample rows spread evenly over
// the vector file (deterministic: the same collection gives the same
// estimate). When none of the sample matches it returns half of one
// sample's share: small, but not zero, as the share may be.
// REQUIRES: c.mu held (for reading at least).
func (c *Collection) estimateShareLocked(p filterPlan, now int64) float64 {
	n := uint32(len(c.rowIDs))
	step := max(n/shareSample, 1)
	seen, matched := 0, 0
	for row := step / 2; row < n; row += step {
		if c.dead.Contains(row) {
			continue
		}
		m, ok := c.mems[c.rowIDs[row]]
		if !ok || m.row != row {
			continue
		}
		seen++
		if c.matchLocked(p, m, now) {
			matched++
		}
	}
	if seen == 0 {
		return 1
	}
	if matched == 0 {
		return 0.5 / float64(seen)
	}
	return float64(matched) / float64(seen)
}
