package engine

import (
	"cmp"
	"slices"

	"github.com/memrl/memrl/qtable"
)

// stateCopy is a collection's memories' state as copied under its write
// lock for a snapshot: three sequential passes (the ordered set of live
// ids, the memory table and the qtable's stripes, the last two in no
// particular order), joined by id after the lock is released. The passes walk memory in order rather than looking
// every id up in both tables, which keeps the lock hold short (writers and
// rewards of the collection wait for it).
type stateCopy struct {
	ids  []uint64         // ascending (from the ordered set of live ids)
	mems []snapEntry      // id, expires, key and attrs (shared: immutable memExt fields)
	qs   []qtable.IDEntry // Q and counters of the same ids
}

// copyStateLocked copies the state of every live, unexpired memory.
// REQUIRES: c.mu held for writing (no reward may change Q meanwhile).
func (c *Collection) copyStateLocked(now int64) stateCopy {
	n := len(c.mems)
	cp := stateCopy{ids: make([]uint64, 0, n), mems: make([]snapEntry, 0, n), qs: make([]qtable.IDEntry, 0, n)}
	// Expired memories not yet swept are gone to every reader already.
	// c.expiring holds every memory with an expiry.
	expired := func(id uint64) bool { x, ok := c.expiring[id]; return ok && x <= now }
	c.liveIDs.ascend(0, func(id uint64) bool {
		if !expired(id) {
			cp.ids = append(cp.ids, id)
		}
		return true
	})
	for id, m := range c.mems {
		if !expired(id) {
			x := m.extOrZero()
			cp.mems = append(cp.mems, snapEntry{ID: id, Expires: x.expires, Key: x.key, Attrs: x.attrs})
		}
	}
	c.q.Range(func(id uint64, e qtable.Entry) bool {
		cp.qs = append(cp.qs, qtable.IDEntry{ID: id, Entry: e})
		return true
	})
	return cp
}

// entries joins the passes into the snapshot's entries, by id. Every
// live memory has a qtable entry (INVARIANT of the collection).
func (cp stateCopy) entries() []snapEntry {
	slices.SortFunc(cp.mems, func(a, b snapEntry) int { return cmp.Compare(a.ID, b.ID) })
	slices.SortFunc(cp.qs, func(a, b qtable.IDEntry) int { return cmp.Compare(a.ID, b.ID) })
	j := 0
	for i := range cp.mems {
		e := &cp.mems[i]
		for j < len(cp.qs) && cp.qs[j].ID < e.ID {
			j++
		}
		if j < len(cp.qs) && cp.qs[j].ID == e.ID {
			q := cp.qs[j].Entry
			e.Q, e.Visits, e.LastReward, e.RewardSum, e.Updated = q.Q, q.Visits, q.LastReward, q.RewardSum, q.Updated
		}
	}
	return cp.mems
}
