package engine

import (
	"context"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/memrl/memrl/engine/filter"
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

// deleteChunk bounds the ids of one delete record written by DeleteFilter
// (8 MiB of ids, well below wal.MaxRecordSize).
const deleteChunk = 1 << 20

// DeleteFilterDeferred deletes every live memory whose attributes match e
// and returns how many, and the ticket to wait for before acknowledging.
// The deletes are logged as ordinary delete records, up to deleteChunk ids
// each: a crash before the ticket is durable may keep some of them and not
// others (as it may of a pipeline of MEM.DELs), never part of one.
func (c *Collection) DeleteFilterDeferred(e *filter.Expr) (int, Ticket, error) {
	if err := c.lockLive(); err != nil {
		return 0, 0, err
	}
	defer c.mu.Unlock()
	var ids []uint64
	c.eachMatchLocked(c.planLocked(e), c.db.nowNanos(), func(id uint64) bool {
		ids = append(ids, id)
		return true
	})
	var last Ticket
	for start := 0; start < len(ids); start += deleteChunk {
		lsn, err := c.deleteIDsLocked(ids[start:min(start+deleteChunk, len(ids))])
		if err != nil {
			return start, last, err
		}
		last = Ticket(lsn)
	}
	return len(ids), last, nil
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
