package ivfpq

import (
	"fmt"
	"path/filepath"

	"github.com/cespare/xxhash/v2"

	"github.com/memrl/memrl/vfs"
)

// Open maps dir/FileName of fs read-only (vfs.Map) and returns the index it holds. It reads
// and checks the header, the centroids and codebooks and the list directory
// (each against its checksum) but not the lists themselves: a list's
// checksum is verified the first time a search or Save reads it, and Verify
// checks all of them. A file that fails a check is refused with an error
// wrapping ErrCorrupt (or ErrVersion); one without the index's magic, with
// one wrapping both ErrNotIndexFile and ErrCorrupt. Nothing is returned
// from it.
func Open(fs vfs.FS, dir string) (*Index, error) {
	return open(fs, dir, false)
}

// OpenResident is Open with the file's bytes read into memory from
// vfs.MapResident (in huge pages where the system offers them) instead of
// mapped: a search's reads of the lists it probes are then TLB hits. It
// reads the whole file at open, and the copy stays in memory until Close.
func OpenResident(fs vfs.FS, dir string) (*Index, error) {
	return open(fs, dir, true)
}

func open(fs vfs.FS, dir string, resident bool) (*Index, error) {
	path := filepath.Join(dir, FileName)
	f, err := fs.Open(path)
	if err != nil {
		return nil, fmt.Errorf("ivfpq: open: %w", err)
	}
	ix, err := openFile(f, resident)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("ivfpq: open %s: %w", path, err)
	}
	return ix, nil
}

func openFile(f vfs.File, resident bool) (*Index, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	if size < headerSize {
		// Short: say whether it is an index at all.
		b := make([]byte, min(size, int64(len(fileMagic))))
		if _, err := f.ReadAt(b, 0); err == nil {
			if err := checkMagic(b); err != nil {
				return nil, err
			}
		}
		return nil, fmt.Errorf("%w: file is %d bytes, shorter than the %d-byte header", ErrCorrupt, size, headerSize)
	}
	if size != int64(int(size)) {
		return nil, fmt.Errorf("%w: file of %d bytes cannot be mapped", ErrCorrupt, size)
	}
	mapFile := vfs.Map
	if resident {
		mapFile = vfs.MapResident
	}
	mm, err := mapFile(f, int(size))
	if err != nil {
		return nil, fmt.Errorf("map: %w", err)
	}
	ix, err := indexFromMapping(mm.Bytes(), uint64(size))
	if err != nil {
		mm.Unmap()
		return nil, err
	}
	ix.mm, ix.file = mm, f
	return ix, nil
}

// indexFromMapping builds an Index whose base segments are views of b.
func indexFromMapping(b []byte, size uint64) (*Index, error) {
	h, err := decodeHeader(b, size)
	if err != nil {
		return nil, err
	}
	p := h.p
	meta := b[h.metaOff : h.metaOff+h.metaLen]
	if got := xxhash.Sum64(meta); got != h.metaSum {
		return nil, fmt.Errorf("%w: centroid section checksum %016x, header says %016x", ErrCorrupt, got, h.metaSum)
	}
	dir := b[h.dirOff:h.dataOff]
	if got := xxhash.Sum64(dir); got != h.dirSum {
		return nil, fmt.Errorf("%w: directory checksum %016x, header says %016x", ErrCorrupt, got, h.dirSum)
	}
	nc := p.NList * p.Dim
	coarse := floatsFrom(meta, nc)
	book := floatsFrom(meta[4*nc:], p.bookLen())
	ix := newIndex(p, coarse, book)
	data := b[h.dataOff:]
	var total uint64
	for l := 0; l < p.NList; l++ {
		e, ok := getDirEntry(dir[l*dirEntrySize:], h.terms16())
		if !ok {
			return nil, fmt.Errorf("%w: list %d: reserved directory bytes are not zero", ErrCorrupt, l)
		}
		if !e.grid.valid() {
			return nil, fmt.Errorf("%w: list %d: term base %g and step %g (want finite, step >= 0)", ErrCorrupt, l, e.grid.base, e.grid.step)
		}
		segLen := segLenFor(p, int(e.n), h.terms16())
		if e.off%8 != 0 || e.off > h.dataLen || segLen > h.dataLen-e.off {
			return nil, fmt.Errorf("%w: list %d: segment [%d,+%d) outside the %d-byte data section", ErrCorrupt, l, e.off, segLen, h.dataLen)
		}
		total += uint64(e.n)
		seg := data[e.off : e.off+segLen]
		idsLen := pad8(4 * uint64(e.n))
		codesLen := uint64(codesLenFor(p, int(e.n)))
		ix.lists[l].base = segment{
			ids:   idsView(seg, int(e.n)),
			codes: seg[idsLen : idsLen+codesLen],
		}
		switch terms := seg[idsLen+pad8(codesLen):]; {
		case !p.hasTerms():
		case h.terms16():
			ix.lists[l].base.terms16 = uint16sView(terms, int(e.n))
			ix.lists[l].base.grid = e.grid
		default:
			ix.lists[l].base.terms = floatsView(terms, int(e.n))
		}
		ix.listBytes += 4*int64(e.n) + int64(codesLen) + int64(termsLenFor(p, int(e.n), h.terms16()))
		ix.baseSum[l] = e.sum
		if e.n > 0 {
			ix.baseState[l].Store(listUnchecked)
		}
		ix.baseBytes[l] = seg
	}
	if total != uint64(h.rows) {
		return nil, fmt.Errorf("%w: lists hold %d rows, header says %d", ErrCorrupt, total, h.rows)
	}
	ix.rows, ix.baseRows = h.rows, h.rows
	ix.trainedFor = h.trainedFor
	return ix, nil
}
