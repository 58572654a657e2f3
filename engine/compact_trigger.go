package engine

import "time"

// The compaction trigger: a goroutine of the DB, like the checkpointer and
// the sweeper, that looks at every collection once per
// compactCheckInterval and starts a background compaction (CompactAsync)
// of each whose reclaimable rows reach Options.CompactShare of its rows
// and number at least Options.CompactMinRows. Reclaimable rows are the
// dead rows (deleted, pruned or expired memories, and the old rows of
// memories added again) less those snapshots pin (pinnedRowsLocked):
// counting pinned rows would start, every interval and again after every
// restart, a compaction that copies them all and frees nothing.

// Defaults of Options.CompactShare and Options.CompactMinRows.
const (
	DefaultCompactShare   = 0.3
	DefaultCompactMinRows = 10000
)

// compactCheckInterval is how often the trigger looks; a variable so that
// tests can make it short.
var compactCheckInterval = time.Second

// compactTrigger starts a background compaction of every collection whose
// reclaimable rows call for one, every compactCheckInterval until Close.
func (db *DB) compactTrigger() {
	interval := compactCheckInterval
	if db.opts.CompactShare < 0 {
		interval = -1
	}
	db.runEvery(interval, db.compactDone, func() {
		db.mu.RLock()
		colls := make([]*Collection, 0, len(db.byUID))
		for _, c := range db.byUID {
			colls = append(colls, c)
		}
		db.mu.RUnlock()
		for _, c := range colls {
			if c.compactDue(db.opts.CompactShare, db.opts.CompactMinRows) {
				if err := c.CompactAsync(); err == nil {
					db.opts.Logf("memrl: collection %q: compaction started (deleted rows past %.0f%%)", c.name, 100*db.opts.CompactShare)
				}
			}
		}
	})
}

// compactDue reports whether c's reclaimable rows call for a compaction.
func (c *Collection) compactDue(share float64, minRows int) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.dropped || c.cs.running {
		return false
	}
	rows := float64(c.vecs.nrows)
	dead := c.dead.GetCardinality()
	if dead < uint64(minRows) || float64(dead) < share*rows {
		return false // cheap: not due even if nothing is pinned
	}
	reclaim := c.reclaimableRowsLocked()
	return reclaim >= uint64(minRows) && float64(reclaim) >= share*rows
}
