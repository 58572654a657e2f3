package engine

import "github.com/RoaringBitmap/roaring/v2"

// forEachPinnedLocked calls fn for every memory that is no longer live but
// that a snapshot still needs (snapshot.go): compaction must keep its
// vector row and payload, and may move them; fn may change m.row and
// m.payOff, and the change is kept.
// REQUIRES: c.mu held for writing.
func (c *Collection) forEachPinnedLocked(fn func(id uint64, m *memory)) {
	c.forEachGhostLocked(fn)
}

// pinnedRowsLocked returns the dead rows that snapshots pin: rows a
// compaction has to copy, not free. It is counted afresh from the ghosts
// (no counter to keep in step with every delete, rollback, replay and
// snapshot deletion), which costs a pass over them.
// REQUIRES: c.mu held, for reading at least.
func (c *Collection) pinnedRowsLocked() uint64 {
	if len(c.snap.ghosts) == 0 {
		return 0
	}
	rows := roaring.New()
	for _, m := range c.snap.ghosts {
		if c.dead.Contains(m.row) {
			rows.Add(m.row)
		}
	}
	return rows.GetCardinality()
}

// reclaimableRowsLocked returns the dead rows a compaction would free:
// the rows of deleted, pruned or expired memories and the old rows of
// memories added again, less those snapshots pin.
// REQUIRES: c.mu held, for reading at least.
func (c *Collection) reclaimableRowsLocked() uint64 {
	dead := c.dead.GetCardinality()
	return dead - min(dead, c.pinnedRowsLocked())
}

// pinnedByRowLocked maps the dead rows below n that snapshots pin to the
// pinned memory's id, for compaction to copy them with the live rows,
// under the read lock (pinnedLocked checks each is still pinned then).
// REQUIRES: c.mu held, for reading at least.
func (c *Collection) pinnedByRowLocked(n uint32) map[uint32]uint64 {
	out := make(map[uint32]uint64, len(c.snap.ghosts))
	for id, m := range c.snap.ghosts {
		if m.row < n && c.dead.Contains(m.row) {
			out[m.row] = id
		}
	}
	return out
}

// pinnedLocked returns pinned memory id's record.
// REQUIRES: c.mu held, for reading at least.
func (c *Collection) pinnedLocked(id uint64) (memory, bool) {
	m, ok := c.snap.ghosts[id]
	return m, ok
}
