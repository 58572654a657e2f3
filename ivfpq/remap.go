package ivfpq

import (
	"fmt"
	"slices"
)

// Remap returns a new index, held in memory, with ix's centroids, codebooks
// and training size, whose lists hold the entries of ix whose rows remap
// keeps, renumbered to the rows it returns: remap(old) = (new, true) keeps
// row old as row new, (_, false) leaves it out. Nothing is re-encoded: the
// codes (and L2 terms) are copied, so the new index answers as ix did for
// the rows kept. Compaction uses it when it moves a collection's rows.
//
// REQUIRES: the rows kept map one to one onto [0, rows): Remap checks it
// and fails with ErrBadParams, leaving ix unchanged, when a row is mapped
// twice, past rows, or not at all. Base segments are checksum-verified
// first, as by Save, so corruption is never copied forward. ix stays
// usable; the caller closes it when done. Searches and adds of ix may run
// meanwhile: its lock is held one list at a time (so an add waits for at
// most one list's copy), and rows added meanwhile are seen or not, list by
// list; remap must leave out any row it does not know.
func (ix *Index) Remap(remap func(old uint32) (uint32, bool), rows uint32) (*Index, error) {
	ix.mu.RLock()
	if ix.closed {
		ix.mu.RUnlock()
		return nil, ErrClosed
	}
	p, nlist := ix.p, len(ix.lists)
	out := newIndex(p, ix.coarse, ix.book) // immutable: shared
	out.trainedFor = ix.trainedFor
	ix.mu.RUnlock()
	seen := make([]bool, rows)
	m := p.M
	type entry struct {
		row  uint32
		code []byte
		term float32
	}
	var ents []entry
	var codes []byte // backing store of the unpacked codes of one list
	for l := 0; l < nlist; l++ {
		ents, codes = ents[:0], codes[:0]
		ix.mu.RLock()
		if ix.closed {
			ix.mu.RUnlock()
			return nil, ErrClosed
		}
		if err := ix.checkList(l); err != nil {
			ix.mu.RUnlock()
			return nil, err
		}
		lst := ix.lists[l] // segments are append-only: a copy of the headers is a snapshot
		ix.mu.RUnlock()
		for _, seg := range [2]*segment{&lst.base, &lst.tail} {
			for i, old := range seg.ids {
				nr, keep := remap(old)
				if !keep {
					continue
				}
				if nr >= rows || seen[nr] {
					return nil, fmt.Errorf("%w: remap of row %d to %d: past %d rows or taken twice", ErrBadParams, old, nr, rows)
				}
				seen[nr] = true
				start := len(codes)
				if p.Bits == 8 {
					codes = append(codes, seg.codes[i*m:(i+1)*m]...)
				} else {
					codes = append(codes, make([]byte, m)...)
					getCode4(seg.codes, i, m, codes[start:])
				}
				var term float32
				if p.hasTerms() {
					term = seg.terms[i]
				}
				ents = append(ents, entry{row: nr, code: codes[start : start+m : start+m], term: term})
			}
		}
		// Lists are kept in increasing row order; a remap that moves a
		// row past others (compaction appends pinned rows) reorders them.
		slices.SortFunc(ents, func(a, b entry) int { return int(int64(a.row) - int64(b.row)) })
		for _, e := range ents {
			out.appendLocked(int32(l), e.row, e.code, e.term)
		}
	}
	for r, ok := range seen {
		if !ok {
			return nil, fmt.Errorf("%w: remap leaves row %d of %d without an entry", ErrBadParams, r, rows)
		}
	}
	out.rows = rows
	return out, nil
}
