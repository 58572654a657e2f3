package engine

import (
	"errors"
	"sync/atomic"

	"github.com/memrl/memrl/ivfpq"
)

// Damage to the IVF-PQ index.
//
// The index is derived data: every vector it encodes is in the vector file
// too, so damage to it may cost speed but never an answer. ivfpq checks a
// saved index's header, centroids and list directory at open (damage there
// makes openIndexLocked discard the file and build anew) and each inverted
// list against its checksum the first time it is read; the engine checks
// every list at open as well (checkIndexAtOpen), so that damage is said at
// start rather than met by a query.
//
// A damaged list is not repaired in place. Instead the damaged index stays
// in service: a query that probes the damaged list has ivfpq score that
// list's rows exactly instead of its codes (they are the rows no intact
// list holds: ivfpq/damaged.go), which answers as the intact index would,
// at the cost of one exact distance per row of the list, and reports it
// (SearchStats.Damaged); and a background build (maybeBuildLocked) trains
// and fills a new index, which replaces the damaged one in memory and on
// disk exactly as a retrain does. Until then the damaged index is not
// saved (a save would fail on the list anyway), so a restart meets the
// damage again and does the same. Damage the index cannot search around
// (an error from ivfpq; it needs the vectors, which the engine always
// gives) makes the query an exact scan of the collection.

// checkIndexAtOpen makes openIndexLocked verify every list of a saved index
// (ivfpq.Index.Verify). Tests turn it off to meet the damage in a search.
var checkIndexAtOpen = true

// indexDamage is what a collection knows of damage to its index.
type indexDamage struct {
	// bad is the index in use, once one of its lists has been found
	// damaged; a rebuilt index then replaces it (finishBuild), and bad no
	// longer matches c.ivf. Atomic: searches, under the collection's read
	// lock, set it.
	bad atomic.Pointer[ivfpq.Index]
	// found counts the indexes of the collection found damaged since Open
	// (Info.IndexDamage).
	found atomic.Uint64
}

// noteIndexDamage records that ix has a damaged list (err says which) and
// logs it, the first time it is reported for ix. It returns whether it was
// the first time. Safe under the read lock, or under none.
func (c *Collection) noteIndexDamage(ix *ivfpq.Index, err error) bool {
	if c.damage.bad.Swap(ix) == ix {
		return false
	}
	c.damage.found.Add(1)
	c.db.opts.Logf("memrl: collection %q: IVF-PQ index damaged: searches score the damaged list's rows exactly until a new index, being built, replaces it: %v", c.name, err)
	return true
}

// indexDamaged is noteIndexDamage that also starts the build replacing ix,
// in a goroutine: the caller may hold the collection's lock for reading
// (a retrieval) or for writing (an add's dedup search).
func (c *Collection) indexDamaged(ix *ivfpq.Index, err error) {
	if c.noteIndexDamage(ix, err) {
		go c.rebuildDamaged(ix)
	}
}

// rebuildDamaged starts the build that replaces ix, if ix is still the
// index in use (a build or a compaction may have replaced it since).
func (c *Collection) rebuildDamaged(ix *ivfpq.Index) {
	c.lockWriter() // at the compaction's gate, as every writer (collection.go)
	defer c.mu.Unlock()
	if c.ivf == ix && !c.dropped {
		c.maybeBuildLocked()
	}
}

// indexDamagedLocked reports whether the index in use is known damaged.
// REQUIRES: c.mu held at least for reading.
func (c *Collection) indexDamagedLocked() bool {
	return c.ivf != nil && c.damage.bad.Load() == c.ivf
}

// isIndexDamage reports whether err, from the index, is damage to it.
func isIndexDamage(err error) bool { return errors.Is(err, ivfpq.ErrCorrupt) }
