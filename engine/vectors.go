package engine

import (
	"fmt"
	"math"
	"path/filepath"
	"unsafe"

	"github.com/memrl/memrl/vfs"
)

// vectorStore is a collection's append-only vector file: row r holds the
// dim float32 components (little-endian, the host order on every platform
// memrl supports) at offset r*dim*4. There is no header: the file's format
// version and a checksum per row live in vectors.sum (vecsums.go). The file
// is derived data: the log holds every vector, and a checkpoint records how
// many rows the file had when it was synced, so recovery never trusts bytes
// past that.
//
// Rows are written with WriteAt (pwrite) and kept in one of two ways:
//
//   - resident (the default, Options.MapFiles false): a copy of the rows
//     in anonymous memory advised for huge pages (rowmem.go), read from
//     the file once at open and updated by every put after its write. The
//     re-rank's scattered row reads are then TLB hits; the page cache's
//     copy of the file is clean after a checkpoint and the kernel may
//     reclaim it. The copy is reserved four times ahead of the rows in use
//     (untouched pages cost address space only), so it is copied to a
//     larger reservation a few times as a collection grows, with the
//     collection's lock held. Rows that do not fill a huge page are kept
//     in the Go heap at their size instead (reserve), so that a small
//     collection costs what it holds.
//   - mapped (Options.MapFiles): a read-only shared mmap of the whole
//     file, so a database of millions of vectors opens without copying
//     them (Open still reads them once, to verify them); on Linux the page
//     cache makes the written bytes visible through the mapping at once.
//     The file grows by doubling (a sparse truncate) and the mapping is
//     replaced when it does.
//
// A file whose mapping would not show later writes (vfs.MapShared is false:
// a vfs.MemFS file in tests) is always kept resident.
//
// The store holds no descriptor of its own: writes, growth and syncs take
// the file from the database's fileCache for the length of the call, and
// reads need none, since a mapping outlives the descriptor it was made
// from.
//
// Not safe for concurrent use: the owning collection guards it. REQUIRES:
// put and grow with the collection's lock held for writing; row and rows
// with it held at least for reading (a put may replace the mapping).
type vectorStore struct {
	files    *fileCache
	path     string
	resident bool // rows are read from mem, a copy; otherwise through mm
	dim      int
	rowSize  int64        // dim*4
	mm       *vfs.Mapping // maps capRows rows; nil when capRows is 0 or resident
	mem      rowMem       // resident: rows [0, memRows) reserved, [0, nrows) hold the file's rows
	memRows  uint32       // rows mem can hold
	capRows  uint32       // rows the file (and mapping) can hold
	nrows    uint32       // rows in use: the highest row written + 1

	synced syncMark // how much of the file a checkpoint has synced

	// Checksums (vecsums.go). sums[r] is row r's checksum for r < nrows;
	// the same values are in sumsPath, unless legacy.
	sumsPath   string
	sums       []uint64
	hdr        sumsHeader
	legacy     bool     // no checksum file yet (a collection from before checksums)
	sumsSynced syncMark // how much of sumsPath a checkpoint has synced
}

// openVectorStore opens (creating) the vector file vectors.f32 in dir
// holding nrows rows of dim components, and its checksum file vectors.sum
// (package sumfile). Bytes past nrows rows are ignored and overwritten.
// create says the collection is new: its checksum file is written, with
// a header and no rows, and fsynced (the caller syncs dir). Otherwise a
// missing or empty checksum file means a collection of the format before
// checksums: its rows are summed as found, and the store is legacy until
// migrateSums writes the file.
//
// The checksums of rows [0, nrows) are read but not compared with the
// rows here: recovery verifies the whole collection once the log is
// replayed (Collection.openChecksLocked).
//
// mapped asks for the rows to be read through a mapping of the file rather
// than kept resident (see vectorStore); a file that cannot be mapped so
// is kept resident anyway.
func openVectorStore(files *fileCache, dir string, dim int, nrows uint32, create, mapped bool) (*vectorStore, error) {
	return openVectorStoreGen(files, dir, 0, dim, nrows, create, mapped)
}

// openVectorStoreGen is openVectorStore of the files of generation gen
// (genName: compaction writes a new generation).
func openVectorStoreGen(files *fileCache, dir string, gen uint64, dim int, nrows uint32, create, mapped bool) (*vectorStore, error) {
	path := filepath.Join(dir, genName(vecBase, vecExt, gen))
	cf, err := files.acquire(path)
	if err != nil {
		return nil, err
	}
	defer files.release(cf)
	s := &vectorStore{files: files, path: path, sumsPath: filepath.Join(dir, genName(vecBase, sumsExt, gen)), dim: dim, rowSize: int64(dim) * 4}
	s.resident = !mapped || !vfs.MapShared(cf.f)
	st, err := cf.f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() < int64(nrows)*s.rowSize {
		return nil, fmt.Errorf("engine: vector file %s has %d bytes, the checkpoint needs %d rows of %d", path, st.Size(), nrows, s.rowSize)
	}
	if err := s.mapRows(cf.f, uint32(st.Size()/s.rowSize), nrows); err != nil {
		s.unmap()
		return nil, err
	}
	s.nrows, s.synced.size = nrows, int64(nrows)*s.rowSize
	if err := s.loadSums(create); err != nil {
		s.unmap()
		files.forget(s.sumsPath)
		return nil, err
	}
	return s, nil
}

// mapRows maps a file of capRows rows, of which the first valid rows hold
// data, or, for a resident store, reads those rows into memory the first
// time (later growth of a resident store's file leaves mem as it is: puts
// make room there with reserve).
//
// The new mapping is made before the old one is dropped, so that a failure
// leaves the store as it was: still readable, with its old capacity.
func (s *vectorStore) mapRows(f vfs.File, capRows, valid uint32) error {
	if capRows == 0 {
		return nil
	}
	if s.resident {
		if s.mem.b == nil && valid > 0 {
			if err := s.reserve(valid); err != nil {
				return err
			}
			if _, err := f.ReadAt(s.mem.b[:int64(valid)*s.rowSize], 0); err != nil {
				return fmt.Errorf("engine: reading vector file %s: %w", s.path, err)
			}
		}
		s.capRows = capRows
		return nil
	}
	mm, err := vfs.Map(f, int(int64(capRows)*s.rowSize))
	if err != nil {
		return fmt.Errorf("engine: mmap vector file: %w", err)
	}
	if s.mm != nil {
		if err := s.mm.Unmap(); err != nil {
			mm.Unmap()
			return err
		}
	}
	s.mm, s.capRows = mm, capRows
	return nil
}

// reserveAhead is how many times the rows it needs a resident store
// reserves when it must move its rows to a larger reservation: a
// collection filled to a million rows moves them about ten times, the
// last time a quarter of them.
const reserveAhead = 4

// smallReserveAhead is reserveAhead for rows kept in the Go heap.
const smallReserveAhead = 2

// minReserveBytes is the least a resident store reserves, so that a
// collection filled from empty does not move its first rows at every few
// adds.
const minReserveBytes = 4 << 10

// reserve makes room in a resident store's memory for need rows, moving
// the rows in use to a larger reservation when mem is too small. A
// failure leaves the store as it was.
func (s *vectorStore) reserve(need uint32) error {
	if !s.resident || need <= s.memRows {
		return nil
	}
	rows := uint64(need) * reserveAhead
	if uint64(need)*uint64(s.rowSize) < vfs.HugePage {
		// Rows that do not fill a huge page stay below one, so that they
		// come from the Go heap at their size (vfs.AllocResident): a
		// huge page would commit 2 MiB for a few kilobytes of rows. Heap
		// memory is committed when it is zeroed for reuse, so they
		// reserve only twice ahead: the copies are small.
		rows = min(uint64(need)*smallReserveAhead, uint64(vfs.HugePage-1)/uint64(s.rowSize))
		rows = max(rows, uint64(minReserveBytes)/uint64(s.rowSize), uint64(need))
	}
	rows = min(rows, math.MaxUint32)
	mem, err := allocRowMem(int64(rows) * s.rowSize)
	if err != nil {
		return err
	}
	copy(mem.b, s.mem.b[:int64(s.nrows)*s.rowSize])
	old := s.mem
	s.mem, s.memRows = mem, uint32(min(uint64(len(mem.b))/uint64(s.rowSize), math.MaxUint32))
	return old.release()
}

// grow makes room for at least need rows of f, the store's file.
func (s *vectorStore) grow(f vfs.File, need uint32) error {
	newCap := max(s.capRows*2, need, 1024)
	if err := f.Truncate(int64(newCap) * s.rowSize); err != nil {
		return err
	}
	return s.mapRows(f, newCap, s.nrows)
}

// put writes v as row r, growing the file as needed.
func (s *vectorStore) put(r uint32, v []float32) error {
	cf, err := s.files.acquire(s.path)
	if err != nil {
		return err
	}
	defer s.files.release(cf)
	if r >= s.capRows {
		if err := s.grow(cf.f, r+1); err != nil {
			return err
		}
	}
	if err := s.reserve(r + 1); err != nil {
		return err
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), s.rowSize)
	if _, err := cf.f.WriteAt(b, int64(r)*s.rowSize); err != nil {
		return err
	}
	if err := s.putSum(r, rowSum(r, v)); err != nil {
		return err
	}
	if s.resident {
		copy(s.mem.b[int64(r)*s.rowSize:], b)
	}
	if r >= s.nrows {
		s.nrows = r + 1
	}
	return nil
}

// rows returns rows [0, nrows) as one contiguous slice. It aliases the
// mapping: REQUIRES the caller to stop using it before releasing the lock
// under which it was obtained.
func (s *vectorStore) rows() []float32 {
	if s.nrows == 0 {
		return nil
	}
	b := s.mm.Bytes()
	if s.resident {
		b = s.mem.b
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), int(s.nrows)*s.dim)
}

// row returns row r (aliasing, as rows). REQUIRES: r < nrows.
func (s *vectorStore) row(r uint32) []float32 {
	return s.rows()[int(r)*s.dim : int(r+1)*s.dim]
}

// Vector returns row r; it makes vectorStore an ivfpq.VectorSource.
// REQUIRES: as row.
func (s *vectorStore) Vector(r uint32) []float32 { return s.row(r) }

// syncTo makes rows [0, nrows) durable (see syncMark).
// REQUIRES: the database's ckptMu held; nrows rows were written.
func (s *vectorStore) syncTo(nrows uint32) error {
	cf, err := s.files.acquire(s.path)
	if err != nil {
		return err
	}
	err = s.synced.syncTo(cf.f, int64(nrows)*s.rowSize)
	s.files.release(cf)
	if err != nil {
		return err
	}
	return s.syncSums(nrows)
}

// syncMark remembers how many leading bytes of an append-only file a
// checkpoint has synced, so that the next sync writes back only the bytes
// written since, in paced pieces, before its fsync (vfs.SyncPaced).
// Guarded by the database's ckptMu, not by the collection's lock: only
// checkpoints (and open) touch it.
type syncMark struct{ size int64 }

// syncTo makes bytes [0, size) of f durable.
func (m *syncMark) syncTo(f vfs.File, size int64) error {
	if err := vfs.SyncPaced(f, min(m.size, size), size); err != nil {
		return err
	}
	m.size = size
	return nil
}

// readRows reads rows [from, to) from the vector file (not the resident
// copy), for Verify. REQUIRES: to <= nrows.
func (s *vectorStore) readRows(from, to uint32) ([]float32, error) {
	out := make([]float32, int(to-from)*s.dim)
	if len(out) == 0 {
		return out, nil
	}
	cf, err := s.files.acquire(s.path)
	if err != nil {
		return nil, err
	}
	defer s.files.release(cf)
	b := unsafe.Slice((*byte)(unsafe.Pointer(&out[0])), int64(len(out))*4)
	if _, err := cf.f.ReadAt(b, int64(from)*s.rowSize); err != nil {
		return nil, fmt.Errorf("engine: reading vector file %s: %w", s.path, err)
	}
	return out, nil
}

// heldBytes is the memory the rows are read from: the mapping's length,
// or the resident rows in use.
func (s *vectorStore) heldBytes() int64 {
	if s.resident {
		return int64(s.nrows) * s.rowSize // the pages in use; the reservation past them is address space
	}
	return int64(len(s.mm.Bytes()))
}

// unmap releases the mapping or the resident rows.
func (s *vectorStore) unmap() error {
	var err error
	if s.mm != nil {
		err = s.mm.Unmap()
		s.mm = nil
	}
	if rerr := s.mem.release(); err == nil {
		err = rerr
	}
	s.memRows = 0
	return err
}

func (s *vectorStore) close() error {
	err := s.unmap()
	if cerr := s.files.forget(s.path); err == nil {
		err = cerr
	}
	if cerr := s.files.forget(s.sumsPath); err == nil {
		err = cerr
	}
	return err
}
