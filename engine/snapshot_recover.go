package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// loadSnapshotFileLocked reads snapshot s's file into s.ids, or marks it
// damaged. It reports false when the file does not exist: the snapshot was
// never acknowledged (a crash between its record and its file) or was
// deleted, and the caller drops it.
// REQUIRES: c not yet shared (recovery).
func (c *Collection) loadSnapshotFileLocked(s *snapshot) bool {
	f, err := c.readSnapFile(s.seq)
	switch {
	case err == nil && f.Name == s.name && uint64(len(f.Entries)) == s.count:
		ids := make([]uint64, len(f.Entries))
		for i, e := range f.Entries {
			ids[i] = e.ID
		}
		s.ids = newSnapIDs(ids)
		return true
	case err == nil:
		err = fmt.Errorf("%w: holds %q (%d memories), the catalog %q (%d)", errSnapshotDamaged, f.Name, len(f.Entries), s.name, s.count)
	case errors.Is(err, fs.ErrNotExist):
		c.db.opts.Logf("memrl: recovery: collection %q: snapshot %q has no file (never acknowledged, or deleted); dropped", c.name, s.name)
		return false
	}
	s.ids, s.damage = nil, err.Error()
	c.db.opts.Logf("memrl: recovery: collection %q: snapshot %q is unusable (listed, cannot be rolled back to; MEM.DELSNAPSHOT frees it): %v", c.name, s.name, err)
	return true
}

// finishSnapshotsLocked settles the snapshot state once replay is done:
// the batches of a rollback whose recRollback never reached the log are
// discarded, ghosts that no usable snapshot holds (or that a live memory
// has replaced) are freed, and files of snapshots not in the catalog are
// removed.
// REQUIRES: c not yet shared (recovery).
func (c *Collection) finishSnapshotsLocked() {
	if n := c.snap.replay.len(); n > 0 {
		c.db.opts.Logf("memrl: recovery: collection %q: a rollback torn by a crash (%d changes logged, not committed) is not applied", c.name, n)
		c.snap.replay = rbBatch{}
	}
	for id := range c.snap.ghosts {
		if _, live := c.mems[id]; live {
			delete(c.snap.ghosts, id)
		}
	}
	c.freeGhostsLocked()
	c.removeSnapshotOrphans()
}

// removeSnapshotOrphans removes the files of the snapshots folder that no
// catalog entry names: deleted snapshots whose removal failed, and
// temporary files of writes a crash cut short.
func (c *Collection) removeSnapshotOrphans() {
	names, err := c.db.fs.List(c.snapshotDir())
	if err != nil {
		return // no folder: no snapshot was ever written
	}
	keep := make(map[string]bool, len(c.snap.list))
	for _, s := range c.snap.list {
		keep[filepath.Base(c.snapshotPath(s.seq))] = true
	}
	for _, n := range names {
		if !keep[n] {
			if err := c.db.fs.Remove(filepath.Join(c.snapshotDir(), n)); err != nil {
				c.db.opts.Logf("memrl: collection %q: remove snapshot file %s: %v", c.name, n, err)
			}
		}
	}
}
