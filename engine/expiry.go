package engine

import (
	"fmt"
	"time"
)

// Expiry: a memory may be given a time to live (MEM.ADD … TTL, MEM.EXPIRE).
// What is stored and logged is the absolute expiry (unix nanoseconds of
// Options.Now's clock), never the TTL, so that replay at any later time
// reaches the same state. An expired memory is gone to every reader at
// once (Get, Retrieve, Reward, key lookups): the checks compare its expiry
// with the clock. It is deleted for good by the sweeper (DB.sweeper), which
// logs an ordinary delete, or earlier by an add that reuses its id or key.
// Until then it keeps its row in phase-1 searches, and a retrieval drops it
// from the candidates (so a retrieval can return fewer than K1 candidates
// during the sweep interval after many memories expire at once).

// MaxTTL is the longest time to live: about 100 years, so that now plus a
// TTL never overflows an int64 of nanoseconds.
const MaxTTL = 100 * 365 * 24 * time.Hour

// DefaultSweepInterval is the default of Options.SweepInterval.
const DefaultSweepInterval = time.Second

// sweepBatch bounds the memories one sweep deletes from one collection
// while holding its lock (one delete record); SweepExpired goes on batch
// after batch until none is full.
const sweepBatch = 4096

func checkTTL(ttl time.Duration) error {
	if ttl < 0 || ttl > MaxTTL {
		return fmt.Errorf("%w: TTL must be positive and at most %v", ErrBadParam, MaxTTL)
	}
	return nil
}

// nowNanos reads the database's clock (Options.Now).
func (db *DB) nowNanos() int64 {
	if db.opts.Now != nil {
		return db.opts.Now().UnixNano()
	}
	return time.Now().UnixNano()
}

// expiredAt reports whether m has expired at now.
func (m memory) expiredAt(now int64) bool {
	return m.ext != nil && m.ext.expires != 0 && now >= m.ext.expires
}

// trackExpiryLocked records memory id's expiry (0: none) in the sweeper's
// set. REQUIRES: c.mu held for writing.
func (c *Collection) trackExpiryLocked(id uint64, expires int64) {
	if expires == 0 {
		delete(c.expiring, id)
		return
	}
	c.expiring[id] = expires
	if c.nextExpiry == 0 || expires < c.nextExpiry {
		c.nextExpiry = expires
	}
}

// ExpireDeferred sets memory r's time to live to ttl from now (replacing
// any expiry it had) and returns the ticket to wait for. A ttl of zero or
// less deletes the memory now, as Redis's EXPIRE does with a non-positive
// timeout. An unknown (or expired) memory is an ErrNoMemory error.
func (c *Collection) ExpireDeferred(r Ref, ttl time.Duration) (Ticket, error) {
	if ttl > MaxTTL {
		return 0, checkTTL(ttl)
	}
	if err := c.lockLive(); err != nil {
		return 0, err
	}
	defer c.mu.Unlock()
	now := c.db.nowNanos()
	id, _, err := c.resolveLocked(r, now)
	if err != nil {
		return 0, err
	}
	if ttl <= 0 {
		lsn, err := c.deleteIDsLocked([]uint64{id})
		return Ticket(lsn), err
	}
	return c.logExpireLocked(expireRec{UID: c.uid, ID: id, Expires: now + int64(ttl)})
}

// PersistDeferred removes memory r's expiry. It reports whether the memory
// had one (when not, nothing is logged and the ticket is 0).
func (c *Collection) PersistDeferred(r Ref) (bool, Ticket, error) {
	if err := c.lockLive(); err != nil {
		return false, 0, err
	}
	defer c.mu.Unlock()
	id, m, err := c.resolveLocked(r, c.db.nowNanos())
	if err != nil {
		return false, 0, err
	}
	if m.expires() == 0 {
		return false, 0, nil
	}
	t, err := c.logExpireLocked(expireRec{UID: c.uid, ID: id})
	return err == nil, t, err
}

// TTL returns how long memory r has left to live, and false if it never
// expires.
func (c *Collection) TTL(r Ref) (time.Duration, bool, error) {
	if err := c.rlockLive(); err != nil {
		return 0, false, err
	}
	defer c.mu.RUnlock()
	now := c.db.nowNanos()
	_, m, err := c.resolveLocked(r, now)
	if err != nil || m.expires() == 0 {
		return 0, false, err
	}
	return time.Duration(m.expires() - now), true, nil
}

// REQUIRES: c.mu held for writing.
func (c *Collection) logExpireLocked(rec expireRec) (Ticket, error) {
	lsn, err := c.db.logFor(c.name, encodeExpire(rec))
	if err != nil {
		return 0, err
	}
	c.applyExpireLocked(rec)
	return Ticket(lsn), nil
}

// applyExpireLocked applies a logged expiry change; replay calls it for
// memories that may since have been deleted (then it does nothing).
// REQUIRES: c.mu held for writing.
func (c *Collection) applyExpireLocked(r expireRec) {
	m, ok := c.mems[r.ID]
	if !ok {
		return
	}
	m.ext = makeExt(m.attrs(), m.key(), r.Expires)
	c.mems[r.ID] = m
	c.trackExpiryLocked(r.ID, r.Expires)
	c.markDirtyLocked(r.ID)
}

// sweepExpired deletes up to sweepBatch of the collection's expired
// memories, logging an ordinary delete, and returns how many it deleted
// and the ticket of the delete. (A crash before the delete is durable
// loses nothing a client saw: the memories were already invisible, and the
// next sweep deletes them again.)
func (c *Collection) sweepExpired() (int, Ticket, error) {
	now := c.db.nowNanos()
	// A look under the read lock first: most rounds find nothing due.
	if err := c.rlockLive(); err != nil {
		return 0, 0, err
	}
	due := len(c.expiring) > 0 && c.nextExpiry <= now
	c.mu.RUnlock()
	if !due {
		return 0, 0, nil
	}
	if err := c.lockLive(); err != nil {
		return 0, 0, err
	}
	defer c.mu.Unlock()
	var ids []uint64
	next := int64(0)
	for id, x := range c.expiring {
		if x > now {
			if next == 0 || x < next {
				next = x
			}
			continue
		}
		ids = append(ids, id)
		if len(ids) == sweepBatch {
			next = now // more may be due: the next round looks again
			break
		}
	}
	c.nextExpiry = next
	if len(ids) == 0 {
		return 0, 0, nil
	}
	lsn, err := c.deleteIDsLocked(ids)
	if err != nil {
		c.nextExpiry = now // try again next round
		return 0, 0, err
	}
	return len(ids), Ticket(lsn), nil
}

// SweepExpired runs one round of the sweeper now, over every collection,
// and returns how many expired memories it deleted, once their deletes are
// durable. The sweeper runs it every Options.SweepInterval; tests call it
// directly.
func (db *DB) SweepExpired() (int, error) {
	db.mu.RLock()
	if db.closed {
		db.mu.RUnlock()
		return 0, ErrClosed
	}
	colls := make([]*Collection, 0, len(db.byUID))
	for _, c := range db.byUID {
		colls = append(colls, c)
	}
	db.mu.RUnlock()
	total := 0
	var last Ticket
	for _, c := range colls {
		// A full batch means more may be due: go on, releasing the lock
		// between batches so that other writers interleave.
		for {
			n, t, err := c.sweepExpired()
			if err != nil {
				if c.isDropped() {
					break // dropped (or closed) since the listing
				}
				return total, err
			}
			total += n
			last = max(last, t)
			if n < sweepBatch {
				break
			}
		}
	}
	return total, db.WaitDurable(last)
}

// isDropped reports whether c was dropped (or its database closed).
func (c *Collection) isDropped() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.dropped
}

// sweeper runs SweepExpired every Options.SweepInterval until Close.
func (db *DB) sweeper() {
	db.runEvery(db.opts.SweepInterval, db.sweepDone, func() {
		if _, err := db.SweepExpired(); err != nil {
			db.opts.Logf("memrl: expiry sweep: %v", err)
		}
	})
}
