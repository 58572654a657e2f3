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
func (ix *Index) Save(fs vfs.FS, dir string) (err error) {
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

	h := header{p: p, rows: ix.rows, metaOff: headerSize, metaLen: metaLenFor(p), trainedFor: ix.trainedFor}
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
		ids, codes, terms := ix.mergedListLocked(l)
		buf = buf[:0]
		for _, id := range ids {
			buf = binary.LittleEndian.AppendUint32(buf, id)
		}
		buf = appendZeros(buf, int(pad8(uint64(len(buf)))-uint64(len(buf))))
		buf = append(buf, codes...)
		buf = appendZeros(buf, int(pad8(uint64(len(codes)))-uint64(len(codes))))
		buf = appendFloats(buf, terms)
		buf = appendZeros(buf, int(pad8(uint64(len(buf)))-uint64(len(buf))))
		if uint64(len(buf)) != segLenFor(p, len(ids)) {
			return fmt.Errorf("ivfpq: save: internal error: list %d encodes to %d bytes, want %d", l, len(buf), segLenFor(p, len(ids)))
		}
		dirEntry{off: off, n: uint32(len(ids)), sum: xxhash.Sum64(buf)}.put(dirBuf[l*dirEntrySize:])
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

// mergedListLocked returns list l's ids, codes and terms as one segment
// (base then tail), copying only when both parts are non-empty. 4-bit codes are
// repacked because the tail's blocks start at a block boundary of their own.
// REQUIRES: ix.mu held.
func (ix *Index) mergedListLocked(l int) ([]uint32, []byte, []float32) {
	lst := &ix.lists[l]
	b, t := lst.base, lst.tail
	switch {
	case len(t.ids) == 0:
		return b.ids, b.codes, b.terms
	case len(b.ids) == 0:
		return t.ids, t.codes, t.terms
	}
	ids := append(append(make([]uint32, 0, len(b.ids)+len(t.ids)), b.ids...), t.ids...)
	var terms []float32
	if ix.p.hasTerms() {
		terms = append(append(make([]float32, 0, len(ids)), b.terms...), t.terms...)
	}
	if ix.p.Bits == 8 {
		return ids, append(append(make([]byte, 0, len(b.codes)+len(t.codes)), b.codes...), t.codes...), terms
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
	return ids, codes, terms
}
