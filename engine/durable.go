package engine

import (
	"fmt"

	"github.com/memrl/memrl/qtable"
	"github.com/memrl/memrl/wal"
)

// Deferred durability.
//
// Every write method (Add, Reward, Delete, Create, Drop) returns once its
// change is durable. A server answering a pipeline of writes on one
// connection would then wait for one fsync per write, one after another.
// AddDeferred, RewardDeferred and DeleteDeferred split those methods in
// two, like wal.Log's Enqueue and WaitDurable: each applies and logs its
// change and returns a Ticket at once; DB.WaitDurable(ticket) blocks until
// the change is durable. A caller that
// answers many writes at once waits for the largest ticket only, since the
// durable log is always a prefix of the logged order.
//
// INVARIANT (the caller's): nothing derived from a deferred change — the
// reply that acknowledges it above all — leaves the process before
// WaitDurable of its ticket (or of a larger one) has returned nil. The
// server keeps it by gating its connection writer (server/durable.go).
//
// A deferred change is visible to reads at once, like any change between
// its logging and its durability; if the log then fails, WaitDurable
// returns the failure and the change may or may not survive a restart.

// Ticket identifies a logged change for WaitDurable. The zero Ticket is
// durable by definition. Tickets of one database are ordered: waiting for
// one waits for every smaller one too.
type Ticket uint64

// WaitDurable blocks until the change of ticket t (and every change logged
// before it) is durable as the database's sync policy defines durable. It
// returns the log's failure if it could not be made durable.
func (db *DB) WaitDurable(t Ticket) error { return db.log.WaitDurable(wal.LSN(t)) }

// RewardDeferred is Reward without the wait: it applies and logs the
// update and returns the new Q of each id (in the order given) and the
// ticket to pass to DB.WaitDurable before acknowledging it.
func (c *Collection) RewardDeferred(reward float64, ids []uint64, nextQ *float64) ([]float64, Ticket, error) {
	next, err := checkReward(reward, len(ids), nextQ)
	if err != nil {
		return nil, 0, err
	}
	// The read lock keeps deletes (and drops) out while the ids are checked
	// and updated, so either all ids are updated or none.
	if err := c.rlockLive(); err != nil {
		return nil, 0, err
	}
	defer c.mu.RUnlock()
	return c.rewardLocked(reward, ids, next)
}

// RewardRefsDeferred is RewardDeferred of memories named by id or key:
// every key must name a live memory, or nothing changes.
func (c *Collection) RewardRefsDeferred(reward float64, refs []Ref, nextQ *float64) ([]float64, Ticket, error) {
	next, err := checkReward(reward, len(refs), nextQ)
	if err != nil {
		return nil, 0, err
	}
	if err := c.rlockLive(); err != nil {
		return nil, 0, err
	}
	defer c.mu.RUnlock()
	now := c.db.nowNanos()
	ids := make([]uint64, len(refs))
	for i, r := range refs {
		if ids[i], _, err = c.resolveLocked(r, now); err != nil {
			return nil, 0, err
		}
	}
	return c.rewardLocked(reward, ids, next)
}

// checkReward validates a reward's numbers and returns NEXTQ (0 when nil).
func checkReward(reward float64, n int, nextQ *float64) (float64, error) {
	if err := boundedValue(reward, "reward"); err != nil {
		return 0, err
	}
	next := 0.0
	if nextQ != nil {
		if err := boundedValue(*nextQ, "NEXTQ"); err != nil {
			return 0, err
		}
		next = *nextQ
	}
	if n == 0 {
		return 0, fmt.Errorf("%w: no memory ids", ErrBadParam)
	}
	return next, nil
}

// rewardLocked checks that every id names a live memory, then updates
// each. REQUIRES: c.mu held for reading.
func (c *Collection) rewardLocked(reward float64, ids []uint64, next float64) ([]float64, Ticket, error) {
	var clock int64 // 0 expires nothing: read the clock only when something can expire
	if len(c.expiring) > 0 {
		clock = c.db.nowNanos()
	}
	for _, id := range ids {
		if m, ok := c.mems[id]; !ok || m.expiredAt(clock) {
			return nil, 0, fmt.Errorf("%w: %d", ErrNoMemory, id)
		}
	}
	now := c.db.nowNanos()
	out := make([]float64, len(ids))
	var last wal.LSN
	var buf [qRecSize]byte
	var seen map[uint64]int // for long id lists, where firstIndex would be quadratic
	if len(ids) > 16 {
		seen = make(map[uint64]int, len(ids))
	}
	for i, id := range ids {
		j := -1
		if seen != nil {
			if k, ok := seen[id]; ok {
				j = k
			} else {
				seen[id] = i
			}
		} else {
			j = firstIndex(ids[:i], id)
		}
		if j >= 0 {
			out[i] = out[j] // named twice: updated once
			continue
		}
		e, err := c.q.Update(id, func(e *qtable.Entry) error {
			nq := qtable.TD(e.Q, reward, c.cfg.Alpha, c.cfg.Gamma, next)
			if !finite(nq) { // unreachable with values within MaxValue
				return fmt.Errorf("%w: the update overflows Q", ErrBadNumber)
			}
			r := qRec{UID: c.uid, ID: id, Q: nq, Visits: e.Visits + 1, LastReward: reward,
				RewardSum: e.RewardSum + reward, Updated: now}
			// Logged under the stripe lock: the log order of one memory's
			// updates is the order they were applied in.
			lsn, err := c.db.logFor(c.name, appendQ(buf[:0], r))
			if err != nil {
				return err
			}
			last = max(last, lsn)
			applyQ(e, r)
			c.recordHistory(uint64(lsn), r) // history.go
			return nil
		})
		if err != nil {
			return nil, 0, err
		}
		out[i] = e.Q
	}
	return out, Ticket(last), nil
}

// firstIndex returns the index of id in ids, or -1. Rewards name a few
// ids, so a scan beats a map.
func firstIndex(ids []uint64, id uint64) int {
	for i, x := range ids {
		if x == id {
			return i
		}
	}
	return -1
}
