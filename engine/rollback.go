package engine

import (
	"fmt"
	"math"
	"time"

	"github.com/memrl/memrl/qtable"
)

// Rollback (MEM.ROLLBACK) restores a collection to a snapshot: memories
// live now that the snapshot does not hold are deleted (kept as ghosts if
// another snapshot holds them), ghosts it holds come back, and every
// memory it holds gets back its Q, visits, reward statistics, attributes,
// key and expiry. Vectors and payloads are not restored: a memory's vector
// never changes, and SetPayload is not undone (the snapshot holds no
// payloads; see docs/PROTOCOL.md).
//
// Durability and atomicity: the rollback is computed under the
// collection's write lock and logged as its results (the changes, in
// recRollbackBatch records of at most about 1 MiB, then a recRollback that
// commits them) with one wal.Log.EnqueueBatch, and applied in memory in the
// same lock hold; the reply waits for the commit record to be durable.
// Replay applies the changes only when it reaches the commit record, so a
// crash leaves the state before or after the rollback, never a mix.
// Logging results rather than "roll back to S" means replay needs no
// snapshot file (DELSNAPSHOT can remove the file at once) and converges over
// a fuzzy checkpoint like every other record. A checkpoint taken as part of
// the rollback was the alternative; it would write every collection and
// still leave the writes between the rollback and its commit to order.

// rollbackLockHeld, when set (by benchmarks only), is told how long a
// rollback held the collection's write lock.
var rollbackLockHeld func(time.Duration)

// Rollback rolls the collection back to snapshot name and returns how many
// memories changed (deleted, restored or revived), once durable.
func (c *Collection) Rollback(name string) (int, error) {
	n, t, err := c.RollbackDeferred(name)
	if err != nil || t == 0 {
		return n, err
	}
	return n, c.db.WaitDurable(t)
}

// RollbackDeferred is Rollback without the durability wait. The ticket is
// 0 when nothing changed.
func (c *Collection) RollbackDeferred(name string) (int, Ticket, error) {
	c.snapMu.Lock()
	defer c.snapMu.Unlock()
	if err := c.rlockLive(); err != nil {
		return 0, 0, err
	}
	s := c.snapByNameLocked(name)
	var seq uint64
	var damage string
	if s != nil {
		seq, damage = s.seq, s.damage
	}
	c.mu.RUnlock()
	if s == nil {
		return 0, 0, fmt.Errorf("%w: %q", ErrNoSnapshot, name)
	}
	if damage != "" {
		return 0, 0, fmt.Errorf("%w: %q: %s", ErrSnapshotDamaged, name, damage)
	}
	// snapMu keeps the snapshot (and its file) while the file is read
	// without the collection's lock.
	f, err := c.readSnapFile(seq)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %q: %v", ErrSnapshotDamaged, name, err)
	}

	if err := c.lockLive(); err != nil {
		return 0, 0, err
	}
	if rollbackLockHeld != nil {
		defer func(start time.Time) { rollbackLockHeld(time.Since(start)) }(time.Now())
	}
	defer c.mu.Unlock()
	rb, err := c.rollbackChangesLocked(f)
	if err != nil || rb.len() == 0 {
		return 0, 0, err
	}
	recs := encodeRollbackBatches(c.uid, rb)
	recs = append(recs, encodeRollback(rollbackRec{UID: c.uid, Seq: seq, N: uint64(rb.len())}))
	lsn, err := c.db.logBatchFor(c.name, recs)
	if err != nil {
		return 0, 0, err
	}
	c.applyRollbackLocked(rb)
	return rb.len(), Ticket(lsn), nil
}

// rollbackChangesLocked computes the changes that take the collection to
// snapshot f: deletes in id order, then restores and revives in id order.
// It changes nothing.
// REQUIRES: c.mu held for writing.
func (c *Collection) rollbackChangesLocked(f snapFile) (rbBatch, error) {
	var out rbBatch
	// Both are in id order: one merge walk finds the live ids the
	// snapshot does not hold.
	j := 0
	c.liveIDs.ascend(0, func(id uint64) bool {
		for j < len(f.Entries) && f.Entries[j].ID < id {
			j++
		}
		if j == len(f.Entries) || f.Entries[j].ID != id {
			out.dels = append(out.dels, id)
		}
		return true
	})
	for _, e := range f.Entries {
		if m, ok := c.mems[e.ID]; ok {
			cur, _ := c.q.Get(e.ID)
			if sameState(cur, m, e) {
				continue
			}
			out.changes = append(out.changes, rbChange{kind: rbRestore, e: e})
			continue
		}
		g, ok := c.snap.ghosts[e.ID]
		if !ok {
			// Cannot happen: a snapshot pins every memory it holds.
			return rbBatch{}, fmt.Errorf("%w: memory %d of snapshot %q is neither live nor kept for it", ErrCorrupt, e.ID, f.Name)
		}
		out.changes = append(out.changes, rbChange{kind: rbRevive, e: e, m: g})
	}
	return out, nil
}

// sameState reports whether a live memory's state equals e's.
func sameState(q qtable.Entry, m memory, e snapEntry) bool {
	f := math.Float64bits
	return f(q.Q) == f(e.Q) && q.Visits == e.Visits && f(q.LastReward) == f(e.LastReward) &&
		f(q.RewardSum) == f(e.RewardSum) && q.Updated == e.Updated &&
		m.expires() == e.Expires && m.key() == e.Key && string(m.attrs()) == string(e.Attrs)
}

// applyRollbackLocked applies a logged rollback's changes, live and in
// replay. Replay may meet memories a fuzzy checkpoint caught in another
// state: a restore of a memory that is not live does nothing (a later
// record settles it), and a revive replaces whatever is there, as an add
// does.
// REQUIRES: c.mu held for writing.
func (c *Collection) applyRollbackLocked(rb rbBatch) {
	defer c.accountLocked() // datamem.go
	if len(rb.dels) > 0 {
		c.applyDeleteLocked(deleteRec{UID: c.uid, IDs: rb.dels})
	}
	// Keys first come off every restored memory: two memories may trade
	// keys, and indexing one's new key before the other's old one is off
	// would lose it.
	for _, ch := range rb.changes {
		if m, ok := c.mems[ch.e.ID]; ok {
			c.unindexKeyLocked(ch.e.ID, m.key())
		}
	}
	for _, ch := range rb.changes {
		e := ch.e
		switch ch.kind {
		case rbRestore:
			m, ok := c.mems[e.ID]
			if !ok {
				continue
			}
			c.filterIndexRemoveLocked(m.row, m.attrs())
			m.ext = makeExt(e.Attrs, e.Key, e.Expires)
			c.mems[e.ID] = m
			c.filterIndexAddLocked(m.row, m.attrs())
		case rbRevive:
			if old, ok := c.mems[e.ID]; ok {
				if old.row != ch.m.row {
					c.dead.Add(old.row)
				}
				c.filterIndexRemoveLocked(old.row, old.attrs())
			}
			m := ch.m
			m.ext = makeExt(e.Attrs, e.Key, e.Expires)
			c.mems[e.ID] = m
			delete(c.snap.ghosts, e.ID)
			delete(c.deleted, e.ID)
			c.liveIDs.add(e.ID)
			for uint32(len(c.rowIDs)) <= m.row {
				c.rowIDs = append(c.rowIDs, 0)
			}
			c.rowIDs[m.row] = e.ID
			c.dead.Remove(m.row) // the index holds every row: this un-tombstones it
			c.filterIndexAddLocked(m.row, m.attrs())
			if e.ID >= c.nextID {
				c.nextID = e.ID + 1
			}
			if c.aboveLive != 0 && e.ID >= c.aboveLive {
				c.aboveLive = e.ID + 1
			}
		}
		c.indexKeyLocked(e.ID, e.Key)
		c.trackExpiryLocked(e.ID, e.Expires)
		// Put marks it dirty: the next delta checkpoint copies it.
		c.q.Put(e.ID, qtable.Entry{Q: e.Q, Visits: e.Visits, LastReward: e.LastReward, RewardSum: e.RewardSum, Updated: e.Updated})
	}
}

// replayRollbackBatchLocked keeps a rollback batch's changes until the
// rollback's commit record.
// REQUIRES: c not yet shared (recovery).
func (c *Collection) replayRollbackBatchLocked(rb rbBatch) {
	c.snap.replay.dels = append(c.snap.replay.dels, rb.dels...)
	c.snap.replay.changes = append(c.snap.replay.changes, rb.changes...)
}

// replayRollbackLocked applies the changes kept since the batches of
// rollback r began. A count that does not match means the log lost a
// batch of a committed rollback: refused as a bad record.
// REQUIRES: c not yet shared (recovery).
func (c *Collection) replayRollbackLocked(r rollbackRec) error {
	rb := c.snap.replay
	c.snap.replay = rbBatch{}
	if uint64(rb.len()) != r.N {
		return fmt.Errorf("%w: rollback of %d changes found %d in its batches", errBadRecord, r.N, rb.len())
	}
	c.applyRollbackLocked(rb)
	return nil
}
