package engine

import (
	"context"

	"github.com/memrl/memrl/engine/filter"
)

// Filter evaluation in bounded steps (steps.go): a filtered count, and the
// evaluation of an expensive filter for a retrieval, visit the candidate
// memories a step at a time, releasing the collection's read lock between
// steps.

// eachMatchStepsLocked calls fn with the id of every live memory matching
// p (planLocked's plan of an expression e, made under the lock held), in
// steps. It goes over the rows the attribute index leaves (plan
// rows, in row order) when the index narrows e, else over the live ids in
// increasing id order. What it sees of writes between its steps:
//
//   - a memory live, and whose attributes did not change, for the whole
//     call is passed exactly once if it matches e (and had not expired
//     when the call began), never otherwise;
//   - a memory added, deleted or given new attributes during the call may
//     or may not be passed (at most once), judged on its attributes at the
//     moment its step examined it; a memory deleted before its step is not
//     passed;
//   - when a compaction renumbers the rows between two steps of a walk
//     over plan rows, the walk restarts from nothing: reset is called
//     (and once at the start), and fn sees the matches again.
//
// REQUIRES: c.mu held for reading. On a nil error it is held on return
// (it may have been released and taken again meanwhile, so the caller
// must re-read any state it read before); on an error it is not held.
func (c *Collection) eachMatchStepsLocked(ctx context.Context, p filterPlan, reset func(), fn func(id uint64)) error {
	st := newStepper(ctx, c)
	for restart := false; ; restart = true {
		reset()
		if restart {
			p = c.planLocked(p.e)
		}
		now := c.db.nowNanos()
		var err error
		if p.rows != nil {
			err = c.eachPlannedStepsLocked(&st, p, now, fn)
		} else {
			err = c.eachLiveStepsLocked(&st, p, now, fn)
		}
		if err != errRenumbered {
			return err
		}
	}
}

// eachPlannedStepsLocked is eachMatchStepsLocked's walk over p.rows (p's
// own bitmap: planLocked returns a new one). errRenumbered, with the lock
// held, when a compaction changed the rows between two steps.
// REQUIRES: c.mu held for reading; held on a nil or errRenumbered return.
func (c *Collection) eachPlannedStepsLocked(st *stepper, p filterPlan, now int64, fn func(id uint64)) error {
	gen := c.gen // the numbering of p.rows (a compaction changes it)
	it := p.rows.Iterator()
	for it.HasNext() {
		row := it.PeekNext()
		if st.over() {
			if err := st.yieldLocked(); err != nil {
				return err
			}
			if c.gen != gen {
				return errRenumbered
			}
		}
		it.Next()
		if int(row) >= len(c.rowIDs) || c.dead.Contains(row) {
			continue
		}
		id := c.rowIDs[row]
		if m, ok := c.mems[id]; ok && m.row == row && c.matchLocked(p, m, now) {
			fn(id)
		}
	}
	return nil
}

// eachLiveStepsLocked is eachMatchStepsLocked's walk over every live id,
// in increasing order: ids are stable, so a compaction between steps
// changes nothing for it.
// REQUIRES: c.mu held for reading; held on a nil return.
func (c *Collection) eachLiveStepsLocked(st *stepper, p filterPlan, now int64, fn func(id uint64)) error {
	from := uint64(0)
	for {
		more := false
		c.liveIDs.ascend(from, func(id uint64) bool {
			if st.over() {
				from, more = id, true // resume at id, not yet examined
				return false
			}
			if m := c.mems[id]; c.matchLocked(p, m, now) {
				fn(id)
			}
			return true
		})
		if !more {
			return nil
		}
		if err := st.yieldLocked(); err != nil {
			return err
		}
	}
}

// CountFilterContext returns the number of live memories whose attributes
// match e. With an exact plan and no memory that can expire it is the
// plan's cardinality; otherwise each candidate is checked, in bounded
// steps that let writers in between (eachMatchStepsLocked says what the
// count includes of the writes made meanwhile: every memory live and
// unchanged throughout is counted if it matches). When ctx is done before
// the count is, the count stops at the next step and the error wraps
// ctx.Err().
func (c *Collection) CountFilterContext(ctx context.Context, e *filter.Expr) (int, error) {
	if err := checkCtx(c, ctx); err != nil {
		return 0, err
	}
	if err := c.rlockLive(); err != nil {
		return 0, err
	}
	p := c.planLocked(e)
	if p.rows != nil && p.exact && len(c.expiring) == 0 {
		n := int(p.rows.GetCardinality())
		c.mu.RUnlock()
		return n, nil
	}
	n := 0
	err := c.eachMatchStepsLocked(ctx, p, func() { n = 0 }, func(uint64) { n++ })
	if err != nil {
		return 0, err
	}
	c.mu.RUnlock()
	return n, nil
}
