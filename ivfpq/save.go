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
// still map it. Lists read from a previous file are checksum-verified
// first, so corruption is never copied forward. REQUIRES: dir exists on fs.
//
// The file holds the rows the index had when Save began: rows added while
// it runs stay in memory for the next save. Save takes the index lock
// shared only to note the lists' lengths and then to copy out one list at
// a time, never while it writes or syncs, so an Add waits for at most one
// list's copy (and searches, for at most that Add). Why: an Add waiting for the
// exclusive lock also holds back every search that comes after it
// (sync.RWMutex), and it waits under the engine's collection lock; a save
// that held the lock through its fsync (a 40 MB index on a slow disk: a
// second or more) stalled every retrieval of the collection for as long.
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
	// What the file will hold: the rows so far, and each list's length
	// then. Rows are appended in order under the exclusive lock and lists
	// only grow at their tails, so list l's first lens[l] vectors are
	// exactly its rows below rows, whatever is added later.
	ix.mu.RLock()
	if ix.closed {
		ix.mu.RUnlock()
		return ErrClosed
	}
	rows, trainedFor := ix.rows, ix.trainedFor
	lens := make([]int, len(ix.lists))
	for l := range ix.lists {
		lens[l] = ix.lists[l].len()
	}
	ix.mu.RUnlock()

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

	h := header{p: p, version: fileVersionFor(p, terms16), rows: rows, metaOff: headerSize, metaLen: metaLenFor(p), trainedFor: trainedFor}
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
	for l := range lens {
		var grid termGrid
		if buf, grid, err = ix.encodeListPrefix(l, lens[l], h.terms16(), buf[:0]); err != nil {
			return fmt.Errorf("ivfpq: save: list %d: %w", l, err)
		}
		if want := segLenFor(p, lens[l], h.terms16()); uint64(len(buf)) != want {
			return fmt.Errorf("ivfpq: save: internal error: list %d encodes to %d bytes, want %d", l, len(buf), want)
		}
		dirEntry{off: off, n: uint32(lens[l]), sum: xxhash.Sum64(buf), grid: grid}.put(dirBuf[l*dirEntrySize:])
		if _, err = w.Write(buf); err != nil {
			return fmt.Errorf("ivfpq: save: %w", err)
		}
		off += uint64(len(buf))
	}
	if err = w.Flush(); err != nil {
		return fmt.Errorf("ivfpq: save: %w", err)
	}
	h.dataLen = off

	// coarse and book never change after training: no lock needed.
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

// encodeListPrefix appends to buf the file encoding of list l's first n
// vectors (ids, codes and terms, each padded to 8 bytes) and returns it
// with the list's term grid (zero unless terms16). It holds the index lock
// shared while it reads the list, and verifies a list read from a file
// before copying it. REQUIRES: l's length was at least n under the lock
// (lists never shrink).
func (ix *Index) encodeListPrefix(l, n int, terms16 bool, buf []byte) ([]byte, termGrid, error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.closed {
		return buf, termGrid{}, ErrClosed
	}
	if err := ix.checkList(l); err != nil {
		return buf, termGrid{}, err
	}
	lst := ix.listPrefixLocked(l, n)
	ids, codes := mergedList(&lst, ix.p)
	for _, id := range ids {
		buf = binary.LittleEndian.AppendUint32(buf, id)
	}
	buf = appendZeros(buf, int(pad8(uint64(len(buf)))-uint64(len(buf))))
	buf = append(buf, codes...)
	buf = appendZeros(buf, int(pad8(uint64(len(codes)))-uint64(len(codes))))
	var grid termGrid
	switch {
	case !ix.p.hasTerms():
	case terms16:
		t16, g, err := mergedTerms16(&lst)
		if err != nil {
			return buf, termGrid{}, err
		}
		buf, grid = appendUint16s(buf, t16), g
	default:
		buf = appendFloats(buf, mergedTerms(&lst))
	}
	buf = appendZeros(buf, int(pad8(uint64(len(buf)))-uint64(len(buf))))
	return buf, grid, nil
}

// listPrefixLocked returns list l holding only its first n vectors: its
// base (never written, so never longer than n for an n noted under the
// lock) and the first n−len(base) of its tail. A partial last block of
// 4-bit codes is copied with the later vectors' slots cleared, since the
// file keeps them zero. REQUIRES: ix.mu held; len(base) <= n <= l's length.
func (ix *Index) listPrefixLocked(l, n int) invList {
	lst := ix.lists[l]
	k := n - len(lst.base.ids)
	t := &lst.tail
	if k == len(t.ids) {
		return lst
	}
	t.ids = t.ids[:k]
	if t.terms != nil {
		t.terms = t.terms[:k]
	}
	if ix.p.Bits == 8 {
		t.codes = t.codes[:k*ix.p.M]
		return lst
	}
	m := ix.p.M
	codes := make([]byte, 0, codes4Len(k, m))
	code := make([]byte, m)
	for i := range k {
		getCode4(t.codes, i, m, code)
		codes = appendCode4(codes, i, m, code)
	}
	t.codes = codes
	return lst
}

func appendZeros(b []byte, n int) []byte {
	for ; n > 0; n-- {
		b = append(b, 0)
	}
	return b
}

// mergedList returns lst's ids and codes as one segment (base then tail),
// copying only when both parts are non-empty. 4-bit codes are repacked
// because the tail's blocks start at a block boundary of their own.
// REQUIRES: the index lock held if lst is one of its lists (or a view of one).
func mergedList(lst *invList, p Params) ([]uint32, []byte) {
	b, t := lst.base, lst.tail
	switch {
	case len(t.ids) == 0:
		return b.ids, b.codes
	case len(b.ids) == 0:
		return t.ids, t.codes
	}
	ids := append(append(make([]uint32, 0, len(b.ids)+len(t.ids)), b.ids...), t.ids...)
	if p.Bits == 8 {
		return ids, append(append(make([]byte, 0, len(b.codes)+len(t.codes)), b.codes...), t.codes...)
	}
	m := p.M
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

// mergedTerms returns lst's L2 terms as float32 (base then tail), 16-bit
// base terms dequantized, copying only when it must.
// REQUIRES: as mergedList; the index has terms.
func mergedTerms(lst *invList) []float32 {
	b, t := &lst.base, &lst.tail
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

// mergedTerms16 returns lst's L2 terms (base then tail) in 16
// bits and their grid. A base read as 16 bits keeps its grid when every
// tail term lies in its span: its terms are then copied as stored and only
// the tail's quantized, so saving again and again neither moves a stored
// term nor adds error to it. Otherwise (float32 terms, or a tail outside
// the span) the grid is newTermGrid's over all the list's terms, the base's
// dequantized: each such regridding can move an old term by up to half the
// new step. Fails with ErrTermRange (newTermGrid).
// REQUIRES: as mergedList; the index has terms.
func mergedTerms16(lst *invList) ([]uint16, termGrid, error) {
	b, t := &lst.base, &lst.tail
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
	terms := mergedTerms(lst)
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
