package engine

import "fmt"

// Ghosts: memories deleted while a snapshot holds them (snapshot.go). A
// ghost keeps its memory record (row, payload, created, ext) in
// c.snap.ghosts; its row stays dead, so no reader sees it; compaction keeps
// its row and payload (forEachPinnedLocked, pinned.go); a rollback revives
// it (rollback.go).

// freeGhostsLocked forgets every ghost that no usable snapshot holds; its
// row and payload are then garbage for compaction to reclaim.
// REQUIRES: c.mu held for writing.
func (c *Collection) freeGhostsLocked() {
	for id := range c.snap.ghosts {
		if !c.heldLocked(id) {
			delete(c.snap.ghosts, id)
		}
	}
}

// heldLocked reports whether a usable snapshot holds memory id.
// REQUIRES: c.mu held.
func (c *Collection) heldLocked(id uint64) bool {
	for _, s := range c.snap.list {
		if s.holds(id) {
			return true
		}
	}
	return false
}

// pinIfHeldLocked keeps memory id, being deleted, as a ghost when a
// snapshot holds it. applyDeleteLocked calls it, so every delete (MEM.DEL,
// prune, the expiry sweep, a filter delete, a rollback) pins alike, live
// and in replay.
// REQUIRES: c.mu held for writing.
func (c *Collection) pinIfHeldLocked(id uint64, m memory) {
	if len(c.snap.list) == 0 || !c.heldLocked(id) {
		return
	}
	if c.snap.ghosts == nil {
		c.snap.ghosts = make(map[uint64]memory)
	}
	c.snap.ghosts[id] = m
}

// checkNotPinnedLocked enforces ErrIDPinned for an add with an explicit id.
// REQUIRES: c.mu held.
func (c *Collection) checkNotPinnedLocked(id uint64) error {
	if _, ok := c.snap.ghosts[id]; ok {
		return fmt.Errorf("%w: %d", ErrIDPinned, id)
	}
	return nil
}

// unpinLocked forgets a ghost whose id an add (replayed over a fuzzy
// checkpoint) gives to a live memory, keeping ghosts and mems disjoint.
// REQUIRES: c.mu held for writing.
func (c *Collection) unpinLocked(id uint64) { delete(c.snap.ghosts, id) }

// forEachGhostLocked calls fn for every ghost; fn may change the memory
// (compaction moves rows), and the change is kept.
// REQUIRES: c.mu held for writing.
func (c *Collection) forEachGhostLocked(fn func(id uint64, m *memory)) {
	for id, m := range c.snap.ghosts {
		fn(id, &m)
		c.snap.ghosts[id] = m
	}
}
