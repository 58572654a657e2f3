package engine

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/memrl/memrl/qtable"
	"github.com/memrl/memrl/wal"
)

func qEntry(m ckptMemory) qtable.Entry {
	return qtable.Entry{Q: m.q, Visits: m.visits, LastReward: m.lastReward, RewardSum: m.rewardSum, Updated: m.updated}
}

// Checkpoint writes the state of every collection to the CHECKPOINT file
// and removes the log segments it makes unnecessary, so that recovery
// replays only what came after. Rewards keep flowing while it runs; adds and
// deletes of a collection wait while that collection is copied.
//
// The steps, and why they are in this order:
//  1. Under the database's read lock (no collection is created or dropped
//     meanwhile), roll the log to a new segment at position L: every
//     record before L is in older segments.
//  2. Copy each collection's state. Every change logged before L has been
//     applied in memory (changes are applied under the same lock they are
//     logged under), so the copy reflects at least the log before L.
//  3. Wait until the log before L is durable, and fsync the vector and
//     payload files up to the sizes copied: the checkpoint must not point
//     at bytes a crash could take away.
//  4. Write the checkpoint atomically, with L as its replay position.
//  5. Remove log segments wholly before L, and the folders of collections
//     that neither the checkpoint nor the live database knows.
func (db *DB) Checkpoint() error {
	db.ckptMu.Lock()
	defer db.ckptMu.Unlock()
	if err := db.log.Err(); err != nil {
		return err
	}
	db.mu.RLock()
	if db.closed {
		db.mu.RUnlock()
		return ErrClosed
	}
	lsn, err := db.log.Rotate()
	if err != nil {
		db.mu.RUnlock()
		return err
	}
	cp := checkpoint{walLSN: uint64(lsn), nextUID: db.nextUID}
	colls := make([]*Collection, 0, len(db.byUID))
	for _, c := range db.byUID {
		cp.colls = append(cp.colls, c.snapshot())
		colls = append(colls, c)
	}
	db.mu.RUnlock()

	if err := db.log.Sync(); err != nil {
		return err
	}
	// Drop (the only closer of a live collection's files) waits for
	// ckptMu, so these files stay open.
	for _, c := range colls {
		if err := c.vecs.sync(); err != nil {
			return fmt.Errorf("engine: sync vectors of %q: %w", c.name, err)
		}
		if err := c.pays.sync(); err != nil {
			return fmt.Errorf("engine: sync payloads of %q: %w", c.name, err)
		}
	}
	if err := wal.WriteFileAtomic(db.fs, filepath.Join(db.dir, ckptName), encodeCheckpoint(cp)); err != nil {
		return err
	}
	if err := db.log.RemoveBefore(lsn); err != nil {
		return err
	}
	return db.removeOrphansLocked(cp)
}

// snapshot copies the collection's checkpointed state.
func (c *Collection) snapshot() ckptCollection {
	c.mu.RLock()
	defer c.mu.RUnlock()
	cc := ckptCollection{
		uid: c.uid, name: c.name, cfg: c.cfg, nrows: c.vecs.nrows, paySize: c.pays.size,
		nextID: c.nextID, mems: make([]ckptMemory, 0, len(c.mems)),
	}
	for id, m := range c.mems {
		e, _ := c.q.Get(id)
		cc.mems = append(cc.mems, ckptMemory{id: id, m: m, q: e.Q, visits: e.Visits,
			lastReward: e.LastReward, rewardSum: e.RewardSum, updated: e.Updated})
	}
	return cc
}

// removeOrphansLocked removes collection folders that neither cp nor the
// live database refers to: collections dropped before cp was taken.
// REQUIRES: db.ckptMu held.
func (db *DB) removeOrphansLocked(cp checkpoint) error {
	keep := make(map[string]bool)
	for _, c := range cp.colls {
		keep[filepath.Base(collectionDir(db.dir, c.uid))] = true
	}
	db.mu.RLock()
	for uid := range db.byUID {
		keep[filepath.Base(collectionDir(db.dir, uid))] = true
	}
	db.mu.RUnlock()
	root := filepath.Join(db.dir, "collections")
	names, err := db.fs.List(root)
	if err != nil {
		return err
	}
	for _, n := range names {
		if !keep[n] {
			if err := db.fs.RemoveAll(filepath.Join(root, n)); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkpointer runs background checkpoints on time and on log growth.
func (db *DB) checkpointer() {
	defer close(db.done)
	if db.opts.CheckpointInterval < 0 && db.opts.CheckpointBytes < 0 {
		<-db.stop
		return
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	last := time.Now()
	lastBytes := db.log.Stats().Bytes
	for {
		select {
		case <-db.stop:
			return
		case now := <-tick.C:
			bytes := db.log.Stats().Bytes
			due := db.opts.CheckpointInterval > 0 && now.Sub(last) >= db.opts.CheckpointInterval
			due = due || db.opts.CheckpointBytes > 0 && int64(bytes-lastBytes) >= db.opts.CheckpointBytes
			if !due {
				continue
			}
			if err := db.Checkpoint(); err != nil {
				db.opts.Logf("memrl: background checkpoint: %v", err)
			}
			last, lastBytes = time.Now(), db.log.Stats().Bytes
		}
	}
}
