package engine

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Snapshots (MEM.SNAPSHOT, MEM.SNAPSHOTS, MEM.DELSNAPSHOT; rollback.go has
// MEM.ROLLBACK). A snapshot is a named point of a collection: a file of
// every live memory's state (package snapfile) and an entry of the
// collection's catalog, logged (recSnapshot, recDelSnapshot) and carried by
// the checkpoint's collection section sectSnapshots. No vector is copied:
// instead, a memory deleted (or pruned, or expired and swept) while a
// snapshot holds it becomes a ghost: its record (row, payload, ext) is
// kept in c.snap.ghosts, its row stays dead (so retrieval, GET, SCAN,
// COUNT and filters never see it), and compaction keeps its row and
// payload (forEachPinnedLocked). A rollback revives it. A ghost is freed
// when no snapshot holds it any more.

// Sentinel errors of snapshots.
var (
	// ErrSnapshotExists: snapshot names are unique within a collection.
	ErrSnapshotExists = errors.New("snapshot already exists")
	// ErrNoSnapshot: ROLLBACK names an existing snapshot.
	ErrNoSnapshot = errors.New("no such snapshot")
	// ErrBadSnapshotName: snapshot names are 1 to MaxSnapshotName bytes of
	// printable ASCII (space to ~).
	ErrBadSnapshotName = errors.New("invalid snapshot name: use 1-128 printable ASCII characters")
	// ErrTooManySnapshots: a collection holds at most MaxSnapshots.
	ErrTooManySnapshots = errors.New("too many snapshots: delete one first (MEM.DELSNAPSHOT)")
	// ErrSnapshotDamaged: a snapshot whose file is damaged cannot be
	// rolled back to; it is listed, and can be deleted.
	ErrSnapshotDamaged = errors.New("snapshot file damaged: cannot roll back to it")
	// ErrIDPinned: an id that a snapshot holds as a ghost (a deleted
	// memory that a rollback would bring back) cannot be given to a new
	// memory until the snapshots holding it are deleted; otherwise a
	// rollback would find two memories with one id.
	ErrIDPinned = errors.New("memory id is held by a snapshot (deleted, but a rollback would restore it)")
)

// MaxSnapshotName bounds a snapshot's name; MaxSnapshots the snapshots of
// one collection (each costs a bit or two per memory in memory, snapIDs,
// and a check per delete).
const (
	MaxSnapshotName = 128
	MaxSnapshots    = 256
)

func checkSnapshotName(name string) error {
	if len(name) == 0 || len(name) > MaxSnapshotName {
		return ErrBadSnapshotName
	}
	for i := 0; i < len(name); i++ {
		if name[i] < 0x20 || name[i] > 0x7e {
			return ErrBadSnapshotName
		}
	}
	return nil
}

// snapshot is one entry of a collection's catalog.
type snapshot struct {
	name    string
	seq     uint64   // names the file; never reused in the collection
	created int64    // unix nanoseconds
	count   uint64   // memories it holds
	ids     *snapIDs // nil when damaged
	// damage says why the file cannot be used ("" when it can); a damaged
	// snapshot's ids are unknown (nil), so it pins no ghost.
	damage string
}

// holds reports whether s holds memory id.
func (s *snapshot) holds(id uint64) bool {
	return s.ids.contains(id)
}

// snapState is a collection's snapshot state; the collection's mu guards
// it.
// INVARIANT: no id is both in ghosts and in c.mems; every ghost is held by
// a usable snapshot (once recovery is done).
type snapState struct {
	list    []*snapshot // creation order
	nextSeq uint64      // the next snapshot's seq; 0 means 1
	ghosts  map[uint64]memory
	// replay holds the changes of a rollback's batches until its
	// recRollback (recovery only).
	replay rbBatch
}

// SnapshotInfo describes a snapshot (MEM.SNAPSHOTS).
type SnapshotInfo struct {
	Name     string
	Created  time.Time
	Memories int
	Damage   string // why it cannot be rolled back to; "" when it can
}

func (c *Collection) snapByNameLocked(name string) *snapshot {
	for _, s := range c.snap.list {
		if s.name == name {
			return s
		}
	}
	return nil
}

// Snapshot records the collection's present state under name, once the
// change is durable.
func (c *Collection) Snapshot(name string) error {
	t, err := c.SnapshotDeferred(name)
	if err != nil {
		return err
	}
	return c.db.WaitDurable(t)
}

// snapshotLockHeld, when set (by benchmarks only), is told how long a
// snapshot held the collection's write lock.
var snapshotLockHeld func(time.Duration)

// SnapshotDeferred is Snapshot without the durability wait (durable.go):
// the snapshot's file is written and fsynced when it returns, its log
// record perhaps not.
//
// The memories' states are copied under the collection's write lock, in
// the same hold as the snapshot is logged and entered in the catalog, so
// that every delete after it pins what it needs; the file is written after
// the lock is released (other snapshot commands of the collection wait,
// c.snapMu). A crash between the record and the file leaves an entry
// without a file, which recovery drops: it was never acknowledged.
func (c *Collection) SnapshotDeferred(name string) (Ticket, error) {
	if err := checkSnapshotName(name); err != nil {
		return 0, err
	}
	c.snapMu.Lock()
	defer c.snapMu.Unlock()
	if err := c.lockLive(); err != nil {
		return 0, err
	}
	locked := time.Now()
	if c.snapByNameLocked(name) != nil {
		c.mu.Unlock()
		return 0, fmt.Errorf("%w: %q", ErrSnapshotExists, name)
	}
	if len(c.snap.list) >= MaxSnapshots {
		c.mu.Unlock()
		return 0, fmt.Errorf("%w: collection %q holds %d", ErrTooManySnapshots, c.name, MaxSnapshots)
	}
	now := c.db.nowNanos()
	f := snapFile{UID: c.uid, Seq: max(c.snap.nextSeq, 1), Created: now, Name: name}
	cp := c.copyStateLocked(now)
	ids := cp.ids
	r := snapshotRec{UID: c.uid, Seq: f.Seq, Created: now, Count: uint64(len(ids)), Name: name}
	lsn, err := c.db.logFor(c.name, encodeSnapshot(r))
	if err != nil {
		c.mu.Unlock()
		return 0, err
	}
	c.applySnapshotLocked(r, newSnapIDs(ids))
	c.mu.Unlock()
	if snapshotLockHeld != nil {
		snapshotLockHeld(time.Since(locked))
	}
	f.Entries = cp.entries()

	if err := c.writeSnapFile(f); err != nil {
		// Take it back: logged, so that replay drops it too. (A failed
		// fsync is not retried: the file is left for recovery to drop.)
		werr := fmt.Errorf("engine: write snapshot %q: %w", name, err)
		if err := c.lockLive(); err != nil {
			return 0, werr
		}
		d := delSnapshotRec{UID: c.uid, Seq: f.Seq}
		if _, err := c.db.logFor(c.name, encodeDelSnapshot(d)); err == nil {
			c.applyDelSnapshotLocked(d)
		}
		c.mu.Unlock()
		return 0, werr
	}
	return Ticket(lsn), nil
}

// applySnapshotLocked enters a logged snapshot into the catalog. Replay
// skips one whose seq is below nextSeq: the checkpoint already saw it
// (and, if it is not listed, its delete).
// REQUIRES: c.mu held for writing.
func (c *Collection) applySnapshotLocked(r snapshotRec, ids *snapIDs) {
	if r.Seq < max(c.snap.nextSeq, 1) {
		return
	}
	c.snap.nextSeq = r.Seq + 1
	c.snap.list = append(c.snap.list, &snapshot{name: r.Name, seq: r.Seq, created: r.Created, count: r.Count, ids: ids})
}

// Snapshots lists the collection's snapshots, oldest first.
func (c *Collection) Snapshots() ([]SnapshotInfo, error) {
	if err := c.rlockLive(); err != nil {
		return nil, err
	}
	defer c.mu.RUnlock()
	out := make([]SnapshotInfo, len(c.snap.list))
	for i, s := range c.snap.list {
		out[i] = SnapshotInfo{Name: s.name, Created: time.Unix(0, s.created), Memories: int(s.count), Damage: s.damage}
	}
	return out, nil
}

// DeleteSnapshot frees snapshot name (and the ghosts only it held) and
// reports whether it existed, once the change is durable.
func (c *Collection) DeleteSnapshot(name string) (bool, error) {
	ok, t, err := c.DeleteSnapshotDeferred(name)
	if err != nil || t == 0 {
		return ok, err
	}
	return ok, c.db.WaitDurable(t)
}

// DeleteSnapshotDeferred is DeleteSnapshot without the durability wait.
// The file is removed at once: replay needs no snapshot file (a rollback
// is logged as its results), and an entry whose file is gone is dropped by
// recovery, which is what the logged delete does anyway.
func (c *Collection) DeleteSnapshotDeferred(name string) (bool, Ticket, error) {
	c.snapMu.Lock()
	defer c.snapMu.Unlock()
	if err := c.lockLive(); err != nil {
		return false, 0, err
	}
	s := c.snapByNameLocked(name)
	if s == nil {
		c.mu.Unlock()
		return false, 0, nil
	}
	d := delSnapshotRec{UID: c.uid, Seq: s.seq}
	lsn, err := c.db.logFor(c.name, encodeDelSnapshot(d))
	if err != nil {
		c.mu.Unlock()
		return false, 0, err
	}
	c.applyDelSnapshotLocked(d)
	c.mu.Unlock()
	if err := c.db.fs.Remove(c.snapshotPath(s.seq)); err != nil {
		// Removed at the next open instead (removeSnapshotOrphans).
		c.db.opts.Logf("memrl: collection %q: remove snapshot file: %v", c.name, err)
	}
	return true, Ticket(lsn), nil
}

// applyDelSnapshotLocked removes snapshot seq from the catalog and frees
// the ghosts no other snapshot holds.
// REQUIRES: c.mu held for writing.
func (c *Collection) applyDelSnapshotLocked(r delSnapshotRec) {
	i := slices.IndexFunc(c.snap.list, func(s *snapshot) bool { return s.seq == r.Seq })
	if i < 0 {
		return
	}
	c.snap.list = slices.Delete(c.snap.list, i, i+1)
	c.freeGhostsLocked()
}

// SnapshotStats are the snapshot figures of MEM.INFO.
type SnapshotStats struct {
	Snapshots int // catalog entries
	Pinned    int // deleted memories kept for them (ghosts)
}

// SnapshotStats returns the collection's snapshot figures.
func (c *Collection) SnapshotStats() (SnapshotStats, error) {
	if err := c.rlockLive(); err != nil {
		return SnapshotStats{}, err
	}
	defer c.mu.RUnlock()
	return SnapshotStats{Snapshots: len(c.snap.list), Pinned: len(c.snap.ghosts)}, nil
}
