package ivfpq

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"path/filepath"

	"github.com/cespare/xxhash/v2"

	"github.com/memrl/memrl/vfs"
)

// Save writes the index to dir/FileName on fs atomically (vfs.AtomicFile):
// it writes a temporary file, fsyncs it, renames it over FileName and
// fsyncs dir, so a crash leaves either the old file or the new one. The old
// file is not shrunk (vfs.CreateAtomicMapped): an index opened from it may
// still map it. Save holds the index lock shared: searches continue, adds
// wait. Lists read from a previous file are checksum-verified first, so
// corruption is never copied forward. REQUIRES: dir exists on fs.
//
// An index with L2 terms is written as format version 4, its terms in 16
// bits on a grid per list (terms16.go); Save fails with ErrTermRange,
// leaving the old file, if a list's terms are not finite (only vectors far
// beyond the engine's MaxComponent make them so). Others are written as
// version 2 or 3, as before.
func (ix *Index) Save(fs vfs.FS, dir string) error {
	return ix.save(fs, dir, true)
}

// save is Save; terms16 false writes an index with terms in the float32
// layout of versions 2 and 3 instead, as builds before version 4 did
// (tests use it to check that such files still open).
func (ix *Index) save(fs vfs.FS, dir string, terms16 bool) (err error) {
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

	p := ix.p
	af, err := vfs.CreateAtomicMapped(fs, filepath.Join(dir, FileName))
	if err != nil {
		return fmt.Errorf("ivfpq: save: %w", err)
	}
	committing := false
	defer func() {
		if err != nil && !committing {
			af.Abort()
		}
	}()

	h := header{p: p, version: fileVersionFor(p, terms16), rows: ix.rows, metaOff: headerSize, metaLen: metaLenFor(p), trainedFor: ix.trainedFor}
	h.dirOff = pad8(h.metaOff + h.metaLen)
	h.dataOff = h.dirOff + uint64(p.NList)*dirEntrySize

	// The header, meta and directory at the front are known only once the
	// lists are written: reserve their bytes, write the data section,
	// hashing each list as it goes, then fill the front in.
	w := bufio.NewWriterSize(af, 1<<20)
	if _, err = w.Write(make([]byte, h.dataOff)); err != nil {
		return fmt.Errorf("ivfpq: save: %w", err)
	}
	dirBuf := make([]byte, p.NList*dirEntrySize)
	var off uint64
	var buf []byte
	for l := range ix.lists {
		ids, codes := ix.mergedListLocked(l)
		buf = buf[:0]
		for _, id := range ids {
			buf = binary.LittleEndian.AppendUint32(buf, id)
		}
		buf = appendZeros(buf, int(pad8(uint64(len(buf)))-uint64(len(buf))))
		buf = append(buf, codes...)
		buf = appendZeros(buf, int(pad8(uint64(len(codes)))-uint64(len(codes))))
		var grid termGrid
		switch {
		case !p.hasTerms():
		case h.terms16():
			var t16 []uint16
			if t16, grid, err = ix.mergedTerms16Locked(l); err != nil {
				return fmt.Errorf("ivfpq: save: list %d: %w", l, err)
			}
			buf = appendUint16s(buf, t16)
		default:
			buf = appendFloats(buf, ix.mergedTermsLocked(l))
		}
		buf = appendZeros(buf, int(pad8(uint64(len(buf)))-uint64(len(buf))))
		if want := segLenFor(p, len(ids), h.terms16()); uint64(len(buf)) != want {
			return fmt.Errorf("ivfpq: save: internal error: list %d encodes to %d bytes, want %d", l, len(buf), want)
		}
		dirEntry{off: off, n: uint32(len(ids)), sum: xxhash.Sum64(buf), grid: grid}.put(dirBuf[l*dirEntrySize:])
		if _, err = w.Write(buf); err != nil {
			return fmt.Errorf("ivfpq: save: %w", err)
		}
		off += uint64(len(buf))
	}
	if err = w.Flush(); err != nil {
		return fmt.Errorf("ivfpq: save: %w", err)
	}
	h.dataLen = off

	meta := make([]byte, 0, h.metaLen)
	meta = appendFloats(meta, ix.coarse)
	meta = appendFloats(meta, ix.book)
	h.metaSum = xxhash.Sum64(meta)
	h.dirSum = xxhash.Sum64(dirBuf)
	front := h.encode()
	front = append(front, meta...)
	front = appendZeros(front, int(h.dirOff)-len(front))
	front = append(front, dirBuf...)
	if _, err = af.WriteAt(front, 0); err != nil {
		return fmt.Errorf("ivfpq: save: %w", err)
	}
	// Commit syncs, renames and syncs dir; on failure it has discarded the
	// temporary file itself, so the deferred Abort must not run.
	committing = true
	if err = af.Commit(); err != nil {
		return fmt.Errorf("ivfpq: save: %w", err)
	}
	return nil
}

func appendZeros(b []byte, n int) []byte {
	for ; n > 0; n-- {
		b = append(b, 0)
	}
	return b
}

// mergedListLocked returns list l's ids and codes as one segment (base
// then tail), copying only when both parts are non-empty. 4-bit codes are
// repacked because the tail's blocks start at a block boundary of their own.
// REQUIRES: ix.mu held.
func (ix *Index) mergedListLocked(l int) ([]uint32, []byte) {
	lst := &ix.lists[l]
	b, t := lst.base, lst.tail
	switch {
	case len(t.ids) == 0:
		return b.ids, b.codes
	case len(b.ids) == 0:
		return t.ids, t.codes
	}
	ids := append(append(make([]uint32, 0, len(b.ids)+len(t.ids)), b.ids...), t.ids...)
	if ix.p.Bits == 8 {
		return ids, append(append(make([]byte, 0, len(b.codes)+len(t.codes)), b.codes...), t.codes...)
	}
	m := ix.p.M
	code := make([]byte, m)
	var codes []byte
	n := 0
	for _, seg := range [2]segment{b, t} {
		for i := range seg.ids {
			getCode4(seg.codes, i, m, code)
			codes = appendCode4(codes, n, m, code)
			n++
		}
	}
	return ids, codes
}

// mergedTermsLocked returns list l's L2 terms as float32 (base then tail),
// 16-bit base terms dequantized, copying only when it must.
// REQUIRES: ix.mu held; the index has terms.
func (ix *Index) mergedTermsLocked(l int) []float32 {
	b, t := &ix.lists[l].base, &ix.lists[l].tail
	if len(t.ids) == 0 && b.terms16 == nil {
		return b.terms
	}
	if len(b.ids) == 0 {
		return t.terms
	}
	terms := make([]float32, 0, len(b.ids)+len(t.ids))
	for i := range b.ids {
		terms = append(terms, b.term(i))
	}
	return append(terms, t.terms...)
}

// mergedTerms16Locked returns list l's L2 terms (base then tail) in 16
// bits and their grid. A base read as 16 bits keeps its grid when every
// tail term lies in its span: its terms are then copied as stored and only
// the tail's quantized, so saving again and again neither moves a stored
// term nor adds error to it. Otherwise (float32 terms, or a tail outside
// the span) the grid is newTermGrid's over all the list's terms, the base's
// dequantized: each such regridding can move an old term by up to half the
// new step. Fails with ErrTermRange (newTermGrid).
// REQUIRES: ix.mu held; the index has terms.
func (ix *Index) mergedTerms16Locked(l int) ([]uint16, termGrid, error) {
	b, t := &ix.lists[l].base, &ix.lists[l].tail
	if b.terms16 != nil && allCovered(b.grid, t.terms) {
		if len(t.ids) == 0 {
			return b.terms16, b.grid, nil
		}
		out := append(make([]uint16, 0, len(b.ids)+len(t.ids)), b.terms16...)
		for _, x := range t.terms {
			out = append(out, b.grid.quantize(x))
		}
		return out, b.grid, nil
	}
	terms := ix.mergedTermsLocked(l)
	g, err := newTermGrid(terms)
	if err != nil {
		return nil, termGrid{}, err
	}
	out := make([]uint16, len(terms))
	for i, x := range terms {
		out[i] = g.quantize(x)
	}
	return out, g, nil
}

// allCovered reports whether g covers every term of terms.
func allCovered(g termGrid, terms []float32) bool {
	for _, x := range terms {
		if !g.covers(x) {
			return false
		}
	}
	return true
}
