package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/memrl/memrl/engine/filter"
)

// Pruning: deleting the memories an agent no longer profits from, by
// utility, age, disuse or a cap on their number (MEM.PRUNE).

// ErrNoCriterion: a prune names at least one criterion (QBelow, Older,
// Idle or MaxCount), so that a forgotten option never deletes everything.
var ErrNoCriterion = errors.New("prune needs at least one of QBELOW, OLDER, IDLE, MAXCOUNT")

// MaxPruneAge bounds PruneOptions.Older and Idle (about 292 years), so that
// now minus the age never overflows.
const MaxPruneAge = time.Duration(math.MaxInt64 / 2)

// PruneOptions says which memories Prune deletes. Among the live memories
// matching Filter (all when nil), a memory is pruned when it meets every
// criterion set among QBelow (with MinVisits), Older and Idle; then, when
// HasMaxCount, of those left matching Filter only the MaxCount highest-Q
// are kept (ties kept by newer creation, then by higher id).
type PruneOptions struct {
	// QBelow: Q < QBelow (finite), counting only memories with at least
	// MinVisits visits (rewards applied). MinVisits requires HasQBelow.
	QBelow       float64
	HasQBelow    bool
	MinVisits    uint64
	HasMinVisits bool
	// Older: created more than Older before now (0..MaxPruneAge).
	Older    time.Duration
	HasOlder bool
	// Idle: not used for more than Idle (0..MaxPruneAge): the memory's
	// Updated time (its add, or its latest reward; retrievals do not count)
	// is more than Idle before now.
	Idle    time.Duration
	HasIdle bool
	// MaxCount: keep at most MaxCount (>= 0) memories matching Filter.
	MaxCount    int
	HasMaxCount bool
	// Filter restricts every criterion to the memories whose attributes
	// match it; nil matches every memory.
	Filter *filter.Expr
	// DryRun counts what would be pruned and changes nothing.
	DryRun bool
}

// validate returns an error wrapping ErrNoCriterion, ErrBadNumber or
// ErrBadParam when o is not a valid prune.
func (o PruneOptions) validate() error {
	if !o.HasQBelow && !o.HasOlder && !o.HasIdle && !o.HasMaxCount {
		return ErrNoCriterion
	}
	if o.HasQBelow && !finite(o.QBelow) {
		return fmt.Errorf("%w: QBELOW", ErrBadNumber)
	}
	if o.HasMinVisits && !o.HasQBelow {
		return fmt.Errorf("%w: MINVISITS needs QBELOW", ErrBadParam)
	}
	if o.HasOlder && (o.Older < 0 || o.Older > MaxPruneAge) {
		return fmt.Errorf("%w: OLDER", ErrBadParam)
	}
	if o.HasIdle && (o.Idle < 0 || o.Idle > MaxPruneAge) {
		return fmt.Errorf("%w: IDLE", ErrBadParam)
	}
	if o.HasMaxCount && o.MaxCount < 0 {
		return fmt.Errorf("%w: MAXCOUNT", ErrBadParam)
	}
	return nil
}

// Prune deletes the memories o selects (see PruneOptions) and returns how
// many, and the ticket to wait for before acknowledging (0 when nothing
// was deleted or o.DryRun). Expired memories are neither counted nor
// kept by MaxCount: to a client they are gone already. The deletes are
// logged as ordinary delete records, up to deleteChunk ids a record.
// A bad o changes nothing.
func (c *Collection) Prune(o PruneOptions) (int, Ticket, error) {
	return c.PruneContext(context.Background(), o)
}

// PruneContext is Prune, whose filter (o.Filter) is first evaluated in
// bounded steps under the read lock (pruneMatches): when ctx is done
// meanwhile, the error wraps ctx.Err() and nothing is pruned.
func (c *Collection) PruneContext(ctx context.Context, o PruneOptions) (int, Ticket, error) {
	if err := o.validate(); err != nil {
		return 0, 0, err
	}
	if err := checkCtx(c, ctx); err != nil {
		return 0, 0, err
	}
	matches, err := c.pruneMatches(ctx, o)
	if err != nil {
		return 0, 0, err
	}
	if o.DryRun {
		if err := c.rlockLive(); err != nil {
			return 0, 0, err
		}
		defer c.mu.RUnlock()
		return len(c.pruneSelectLocked(o, matches)), 0, nil
	}
	if err := c.lockLive(); err != nil {
		return 0, 0, err
	}
	defer c.mu.Unlock()
	ids := c.pruneSelectLocked(o, matches)
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

// pruneCand is a memory MaxCount ranks.
type pruneCand struct {
	id      uint64
	q       float64
	created int64
}

// pruneMatches returns, when o has a filter, the ids of the live memories
// matching it, found in bounded steps under the read lock
// (eachMatchStepsLocked), so that an expensive filter is not evaluated
// on the whole collection under the write lock that pruning takes; nil
// without a filter. An error wraps ctx.Err() or says the collection is
// gone.
func (c *Collection) pruneMatches(ctx context.Context, o PruneOptions) ([]uint64, error) {
	if o.Filter == nil {
		return nil, nil
	}
	if err := c.rlockLive(); err != nil {
		return nil, err
	}
	ids := []uint64{}
	err := c.eachMatchStepsLocked(ctx, c.planLocked(o.Filter), func() { ids = ids[:0] }, func(id uint64) { ids = append(ids, id) })
	if err != nil {
		return nil, err // the lock is released
	}
	c.mu.RUnlock()
	return ids, nil
}

// pruneSelectLocked returns the ids of the live memories o prunes, in
// ascending order. With o.Filter, matches (when not nil) are pruneMatches'
// ids: only those are considered, the filter evaluated again on each,
// so that the write lock is held for a time in proportion to the
// matches, not to the collection.
// REQUIRES: c.mu held (for reading at least); o valid.
func (c *Collection) pruneSelectLocked(o PruneOptions, matches []uint64) []uint64 {
	now := c.db.nowNanos()
	criteria := o.HasQBelow || o.HasOlder || o.HasIdle
	var ids []uint64
	var kept []pruneCand // matching, not pruned by the criteria: MaxCount's ranks
	visit := func(id uint64) bool {
		m := c.mems[id]
		e, _ := c.q.Get(id) // INVARIANT: every live memory has an entry
		if criteria && c.prunesLocked(o, m, e.Q, e.Visits, e.Updated, now) {
			ids = append(ids, id)
		} else if o.HasMaxCount {
			kept = append(kept, pruneCand{id: id, q: e.Q, created: m.created})
		}
		return true
	}
	switch {
	case o.Filter != nil && matches != nil:
		// Evaluated again, on the matches only: one changed meanwhile
		// not to match is not pruned.
		for _, id := range matches {
			if m, ok := c.mems[id]; ok && c.matchLocked(filterPlan{e: o.Filter}, m, now) {
				visit(id)
			}
		}
	case o.Filter != nil:
		c.eachMatchLocked(c.planLocked(o.Filter), now, visit)
	default:
		for id, m := range c.mems {
			if !m.expiredAt(now) {
				visit(id)
			}
		}
	}
	if o.HasMaxCount && len(kept) > o.MaxCount {
		// Best first: higher Q, then newer, then higher id (ids are unique,
		// so the order, and which are kept, is deterministic).
		slices.SortFunc(kept, func(a, b pruneCand) int {
			switch {
			case a.q != b.q:
				if a.q > b.q {
					return -1
				}
				return 1
			case a.created != b.created:
				if a.created > b.created {
					return -1
				}
				return 1
			case a.id > b.id:
				return -1
			default:
				return 1
			}
		})
		for _, k := range kept[o.MaxCount:] {
			ids = append(ids, k.id)
		}
	}
	slices.Sort(ids)
	return ids
}

// prunesLocked reports whether a memory meets every criterion of o among
// QBelow/MinVisits, Older and Idle (MaxCount aside).
// REQUIRES: c.mu held (for reading at least).
func (c *Collection) prunesLocked(o PruneOptions, m memory, q float64, visits uint64, updated, now int64) bool {
	if o.HasQBelow && (q >= o.QBelow || (o.HasMinVisits && visits < o.MinVisits)) {
		return false
	}
	if o.HasOlder && now-m.created <= int64(o.Older) {
		return false
	}
	if o.HasIdle && now-updated <= int64(o.Idle) {
		return false
	}
	return true
}
