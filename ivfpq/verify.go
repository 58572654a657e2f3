package ivfpq

import (
	"fmt"

	"github.com/cespare/xxhash/v2"
)

// checkList verifies list l's base segment against its recorded checksum
// the first time it is read, and remembers the verdict. A segment whose
// checksum matches but that names a row at or past the index's row count
// (which only a buggy writer could produce) is bad too: callers index
// their own tables with the rows a search returns.
// REQUIRES: ix.mu held (shared is enough: concurrent callers may both hash,
// and store the same verdict).
func (ix *Index) checkList(l int) error {
	switch ix.baseState[l].Load() {
	case listGood:
		return nil
	case listUnchecked:
		if xxhash.Sum64(ix.baseBytes[l]) == ix.baseSum[l] && rowsBelow(ix.lists[l].base.ids, ix.rows) {
			ix.baseState[l].Store(listGood)
			return nil
		}
		ix.baseState[l].Store(listBad)
	}
	return fmt.Errorf("%w: list %d fails its checksum or names a row past the index's %d", ErrCorrupt, l, ix.rows)
}

// rowsBelow reports whether every row id in ids is below n.
func rowsBelow(ids []uint32, n uint32) bool {
	for _, id := range ids {
		if id >= n {
			return false
		}
	}
	return true
}

// Verify checks every list read from the index file against its checksum
// (Open checks only the header, centroids and directory). It returns an
// error wrapping ErrCorrupt naming the first bad list.
func (ix *Index) Verify() error {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.closed {
		return ErrClosed
	}
	for l := range ix.lists {
		if err := ix.checkList(l); err != nil {
			return err
		}
	}
	return nil
}
