package engine

import (
	"fmt"

	"github.com/memrl/memrl/qtable"
)

// Dedup on add (MEM.ADD … DEDUP s [MERGE KEEP|MAX|AVG]).
//
// An add with AddRequest.HasDedup first looks for the live memory most
// similar to the new vector; if its similarity is at least Dedup (the
// similarity of DELTA: cosine, dot product, or minus squared L2), nothing
// is added and the add returns that memory's id, after merging the Q the
// new memory would have had into it as DedupMerge says. The search and the
// add run under one hold of the collection's write lock, so two concurrent
// adds of near-copies never both get in. The search is phase 1's (exact,
// or the IVF-PQ index with its recall): a near-copy the index misses is
// added.
//
// Only single adds (Add, MEM.ADD) dedup: a batch (AddBatch, MEM.MADD)
// with Dedup is refused (ErrBadParam), even a batch of one, since each
// memory would have to be checked against the earlier ones of the batch
// too, and a batch's answer should not depend on its size.

// DedupMerge says what a deduplicated add does to the existing memory's Q.
type DedupMerge uint8

const (
	DedupKeep DedupMerge = iota // leave the existing memory's Q (the default)
	DedupMax                    // Q ← max(Q, the new memory's Q)
	DedupAvg                    // Q ← (Q + the new memory's Q) / 2
)

// ParseDedupMerge parses KEEP, MAX or AVG (any case).
func ParseDedupMerge(s string) (DedupMerge, error) {
	switch s {
	case "KEEP", "keep", "Keep":
		return DedupKeep, nil
	case "MAX", "max", "Max":
		return DedupMax, nil
	case "AVG", "avg", "Avg":
		return DedupAvg, nil
	}
	return 0, fmt.Errorf("%w: MERGE must be KEEP, MAX or AVG, got %q", ErrBadParam, s)
}

// dedupSearchOptions is the search of a deduplicated add: phase 1's, or
// with Options.ExactWrites an exact scan, whose answer depends only on the
// memories and not on whether (or when) this process built an index.
func (c *Collection) dedupSearchOptions(req *AddRequest) SearchOptions {
	so := SearchOptions{K1: 1, Delta: req.Dedup, HasDelta: true}
	if c.db.opts.ExactWrites {
		so.Path = PathExact
	}
	return so
}

// dedupLocked looks for the memory rec would duplicate. It returns its id
// and true, having merged rec's Q into it (logged as a recQ, whose ticket
// it returns), or false when rec is no near-copy of any live memory.
// REQUIRES: c.mu held for writing; rec.vec checked (checkAdd).
func (c *Collection) dedupLocked(req *AddRequest, rec addRec, now int64) (uint64, Ticket, bool, error) {
	so := c.dedupSearchOptions(req)
	if len(c.expiring) > 0 {
		so.Match = func(row uint32) bool { return !c.mems[c.rowIDs[row]].expiredAt(now) }
	}
	cands, err := c.index.search(rec.Vec, so)
	if err != nil || len(cands) == 0 || float64(cands[0].sim) < req.Dedup {
		return 0, 0, false, err
	}
	id := c.rowIDs[cands[0].row]
	if req.DedupMerge == DedupKeep {
		return id, 0, true, nil
	}
	var lsn Ticket
	_, err = c.q.Update(id, func(e *qtable.Entry) error {
		nq := max(e.Q, rec.Q)
		if req.DedupMerge == DedupAvg {
			nq = (e.Q + rec.Q) / 2
		}
		r := qRec{UID: c.uid, ID: id, Q: nq, Visits: e.Visits, LastReward: e.LastReward,
			RewardSum: e.RewardSum, Updated: now}
		l, err := c.db.logFor(c.name, encodeQ(r))
		if err != nil {
			return err
		}
		lsn = Ticket(l)
		applyQ(e, r)
		c.recordHistory(uint64(l), r) // history.go
		return nil
	})
	if err != nil {
		return 0, 0, false, err
	}
	return id, lsn, true, nil
}
