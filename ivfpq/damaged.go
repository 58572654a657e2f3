package ivfpq

import (
	"sync"

	"github.com/memrl/memrl/simd"
)

// Searching around a damaged list.
//
// A list of the index file that fails its checksum (checkList) cannot be
// read: its row numbers, codes and terms are all suspect. Its rows are
// still known, though, as the rows no intact list holds: the base
// segments of an opened file hold exactly rows [0, baseRows), each once,
// and an intact list's rows are as written. So when a search that has the
// raw vectors (a VectorSource) probes a damaged list, it scores those rows
// exactly instead of its codes (scoreOrphansLocked), and answers as the
// intact index would, or better: the damaged lists together hold about
// rows/NList rows each, which costs that many exact distances, once per
// search. Without a VectorSource there is nothing to score them with, and
// the search fails with ErrCorrupt. A list's tail (rows added since the
// file was opened) is in memory, never damaged, and is scanned as usual.
//
// SearchStats.Damaged tells the caller, so that it can rebuild the index;
// Verify names the damaged list.

// orphanRows holds the rows the damaged lists' base segments held,
// computed once, the first time a search meets a damaged list.
type orphanRows struct {
	once sync.Once
	rows []uint32 // increasing; immutable once computed
}

// noSegment stands for a damaged list's base segment in a scan: empty.
var noSegment segment

// orphansLocked returns the rows below baseRows that no intact list's base
// segment holds: the damaged lists' rows. It verifies every list the
// first time (a search waiting for it meanwhile waits for it to finish).
// REQUIRES: ix.mu held, shared is enough (base segments are immutable).
func (ix *Index) orphansLocked() []uint32 {
	ix.orphans.once.Do(func() {
		held := make([]uint64, (ix.baseRows+63)/64)
		for l := range ix.lists {
			if ix.checkList(l) != nil {
				continue
			}
			for _, row := range ix.lists[l].base.ids {
				if row < ix.baseRows { // checkList bounds rows by ix.rows, which grows with adds
					held[row/64] |= 1 << (row % 64)
				}
			}
		}
		var rows []uint32
		for row := uint32(0); row < ix.baseRows; row++ {
			if held[row/64]&(1<<(row%64)) == 0 {
				rows = append(rows, row)
			}
		}
		ix.orphans.rows = rows
	})
	return ix.orphans.rows
}

// scoreOrphansLocked merges the damaged lists' rows that f keeps (every row
// when f is nil) into s.cands with their exact distances (the scan's
// "smaller is better" scale: squared L2 where the index scores L2, else
// minus the inner product), once per search: a search may probe several
// damaged lists, and their rows are one set.
// REQUIRES: ix.mu held for reading; src not nil.
func (ix *Index) scoreOrphansLocked(q []float32, f *Filter, s *searchScratch, src VectorSource) {
	s.damaged = true
	if s.orphansScored {
		return
	}
	s.orphansScored = true
	l2 := ix.p.l2ADC()
	for _, row := range ix.orphansLocked() {
		v := src.Vector(row)
		var d float32
		if l2 {
			d = simd.L2Sq(q, v)
		} else {
			d = -simd.Dot(q, v)
		}
		if d >= s.cands.worst() || f != nil && !f.keep(row) {
			continue
		}
		s.cands.push(d, row)
	}
}
