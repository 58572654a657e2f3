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
// the rows kept (16-bit terms of a saved index are copied as the float32
// values they stand for, so scores may differ in their last bits).
// Compaction uses it when it moves a collection's rows.
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
	out := newIndex(ix.p, ix.coarse, ix.book) // immutable: shared
	out.trainedFor = ix.trainedFor
	ix.mu.RUnlock()
	if err := ix.remapInto(out, remap, rows); err != nil {
		return nil, err
	}
	return out, nil
}

// RemapAppend appends to out, an index Remap made from ix, the entries of
// ix that remap keeps as rows [out.Rows(), rows), as Remap does: codes
// copied, not re-encoded. Compaction uses it for the rows added while its
// Remap ran. remap must leave out every row below out.Rows() (those are in
// out already). On an error (a row mapped twice, past rows, or not at all:
// ErrBadParams) out is unchanged.
func (ix *Index) RemapAppend(out *Index, remap func(old uint32) (uint32, bool), rows uint32) error {
	if &out.coarse[0] != &ix.coarse[0] {
		return fmt.Errorf("%w: RemapAppend to an index not remapped from this one", ErrBadParams)
	}
	return ix.remapInto(out, remap, rows)
}

// remapInto appends the entries of ix that remap keeps, as rows
// [out.Rows(), rows), to out's lists, each list kept in increasing row
// order (the kept rows' new numbers are above every row out holds).
func (ix *Index) remapInto(out *Index, remap func(old uint32) (uint32, bool), rows uint32) error {
	ix.mu.RLock()
	if ix.closed {
		ix.mu.RUnlock()
		return ErrClosed
	}
	p, nlist := ix.p, len(ix.lists)
	ix.mu.RUnlock()
	out.mu.RLock()
	from := out.rows
	out.mu.RUnlock()
	if rows < from {
		return fmt.Errorf("%w: remap to %d rows, the index holds %d", ErrBadParams, rows, from)
	}
	seen := make([]bool, rows-from)
	m := p.M
	type entry struct {
		row  uint32
		code []byte
		term float32
	}
	lists := make([][]entry, nlist)
	var codes []byte // backing store of the unpacked codes of one list
	for l := 0; l < nlist; l++ {
		ix.mu.RLock()
		if ix.closed {
			ix.mu.RUnlock()
			return ErrClosed
		}
		if err := ix.checkList(l); err != nil {
			ix.mu.RUnlock()
			return err
		}
		lst := ix.lists[l] // segments are append-only: a copy of the headers is a snapshot
		ix.mu.RUnlock()
		codes = nil
		var ents []entry
		for _, seg := range [2]*segment{&lst.base, &lst.tail} {
			for i, old := range seg.ids {
				nr, keep := remap(old)
				if !keep {
					continue
				}
				if nr < from || nr >= rows || seen[nr-from] {
					return fmt.Errorf("%w: remap of row %d to %d: outside [%d, %d) or taken twice", ErrBadParams, old, nr, from, rows)
				}
				seen[nr-from] = true
				start := len(codes)
				if p.Bits == 8 {
					codes = append(codes, seg.codes[i*m:(i+1)*m]...)
				} else {
					codes = append(codes, make([]byte, m)...)
					getCode4(seg.codes, i, m, codes[start:])
				}
				var term float32
				if p.hasTerms() {
					term = seg.term(i) // 16-bit base terms dequantized: tails hold float32
				}
				ents = append(ents, entry{row: nr, code: codes[start : start+m : start+m], term: term})
			}
		}
		// Lists are kept in increasing row order; a remap that moves a
		// row past others (compaction appends pinned rows) reorders them.
		slices.SortFunc(ents, func(a, b entry) int { return int(int64(a.row) - int64(b.row)) })
		lists[l] = ents
	}
	for r, ok := range seen {
		if !ok {
			return fmt.Errorf("%w: remap leaves row %d of %d without an entry", ErrBadParams, from+uint32(r), rows)
		}
	}
	out.mu.Lock()
	defer out.mu.Unlock()
	if out.closed {
		return ErrClosed
	}
	if out.rows != from {
		return fmt.Errorf("%w: index grew during the remap", ErrOutOfOrder)
	}
	for l, ents := range lists {
		for _, e := range ents {
			out.appendLocked(int32(l), e.row, e.code, e.term)
		}
	}
	out.rows = rows
	return nil
}
