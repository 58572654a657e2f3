package engine

// forEachPinnedLocked calls fn for every memory that is no longer live but
// that a snapshot still needs (snapshot.go): compaction must keep its
// vector row and payload, and may move them; fn may change m.row and
// m.payOff, and the change is kept.
// REQUIRES: c.mu held for writing.
func (c *Collection) forEachPinnedLocked(fn func(id uint64, m *memory)) {
	c.forEachGhostLocked(fn)
}
