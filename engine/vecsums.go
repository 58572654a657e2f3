package engine

import (
	"fmt"
	"io"
	"math"
)

// The vector store's checksums: one per row, kept in memory (8 bytes a
// row, under 1% of a row of 256 dimensions) and written through to
// vectors.sum (package sumfile) with every row. Reads check rows against
// the copy in memory; Collection.Verify also checks the file's copy.
//
// REQUIRES (every method): the same locks as the vector store's.

// loadSums opens or creates the checksum file and reads the checksums of
// rows [0, nrows). See openVectorStore for create and legacy files.
func (s *vectorStore) loadSums(create bool) error {
	cf, err := s.files.acquire(s.sumsPath)
	if err != nil {
		return err
	}
	defer s.files.release(cf)
	st, err := cf.f.Stat()
	if err != nil {
		return err
	}
	if st.Size() == 0 {
		if !create {
			// A collection from before checksums: trust the rows as the
			// old format did, until migrateSums writes the file.
			s.legacy = true
			s.hdr = sumsHeader{Dim: uint32(s.dim), LegacyPayloadEnd: math.MaxUint64}
			s.sums = make([]uint64, s.nrows)
			for r := uint32(0); r < s.nrows; r++ {
				s.sums[r] = rowSum(r, s.row(r))
			}
			return nil
		}
		s.hdr = sumsHeader{Dim: uint32(s.dim)}
		if _, err := cf.f.WriteAt(encodeSumsHeader(s.hdr), 0); err != nil {
			return err
		}
		if err := cf.f.Sync(); err != nil {
			return err
		}
		s.sumsSynced.size = sumsHeaderSize
		return nil
	}
	buf := make([]byte, sumsOffset(s.nrows))
	n, err := cf.f.ReadAt(buf, 0)
	if err != nil && err != io.EOF {
		return err
	}
	if s.hdr, err = decodeSumsHeader(buf[:n], s.sumsPath); err != nil {
		return err
	}
	if s.hdr.Dim != uint32(s.dim) {
		return fmt.Errorf("%w: %s: dimension %d, the collection has %d", ErrCorrupt, s.sumsPath, s.hdr.Dim, s.dim)
	}
	s.sums = make([]uint64, s.nrows)
	for r := range s.sums {
		if off := sumsOffset(uint32(r)); off+8 <= int64(n) {
			s.sums[r] = le.Uint64(buf[off:])
		} else {
			// Missing (the file was cut short): a value that cannot
			// match, so that verification reports the row.
			s.sums[r] = ^rowSum(uint32(r), s.row(uint32(r)))
		}
	}
	s.sumsSynced.size = sumsOffset(s.nrows)
	return nil
}

// putSum records sum as row r's checksum, in memory and (unless legacy) in
// the checksum file.
func (s *vectorStore) putSum(r uint32, sum uint64) error {
	if !s.legacy {
		cf, err := s.files.acquire(s.sumsPath)
		if err != nil {
			return err
		}
		var b [8]byte
		le.PutUint64(b[:], sum)
		_, err = cf.f.WriteAt(b[:], sumsOffset(r))
		s.files.release(cf)
		if err != nil {
			return err
		}
	}
	for uint32(len(s.sums)) <= r {
		s.sums = append(s.sums, 0)
	}
	s.sums[r] = sum
	return nil
}

// syncSums makes the checksum file durable up to row nrows.
// REQUIRES: the database's ckptMu held.
func (s *vectorStore) syncSums(nrows uint32) error {
	if s.legacy {
		return nil
	}
	cf, err := s.files.acquire(s.sumsPath)
	if err != nil {
		return err
	}
	defer s.files.release(cf)
	return s.sumsSynced.syncTo(cf.f, sumsOffset(nrows))
}

// checkRow verifies row r against its checksum; the error wraps ErrCorrupt.
// REQUIRES: r < nrows.
func (s *vectorStore) checkRow(r uint32) error {
	if rowSum(r, s.row(r)) != s.sums[r] {
		return fmt.Errorf("%w: vector row %d (%s, offset %d) fails its checksum", ErrCorrupt, r, s.path, int64(r)*s.rowSize)
	}
	return nil
}

// checkSumsHeader reads and checks the checksum file's header (a legacy
// store has none to check).
func (s *vectorStore) checkSumsHeader() error {
	if s.legacy {
		return nil
	}
	cf, err := s.files.acquire(s.sumsPath)
	if err != nil {
		return err
	}
	defer s.files.release(cf)
	buf := make([]byte, sumsHeaderSize)
	n, err := cf.f.ReadAt(buf, 0)
	if err != nil && err != io.EOF {
		return err
	}
	_, err = decodeSumsHeader(buf[:n], s.sumsPath)
	return err
}

// fileSums reads the checksums of rows [from, to) from the checksum file,
// for verification; a legacy store returns its copy in memory. A checksum
// missing from the file (cut short) is returned as one that cannot match.
// REQUIRES: to <= nrows.
func (s *vectorStore) fileSums(from, to uint32) ([]uint64, error) {
	if s.legacy {
		return s.sums[from:to], nil
	}
	cf, err := s.files.acquire(s.sumsPath)
	if err != nil {
		return nil, err
	}
	defer s.files.release(cf)
	buf := make([]byte, 8*int(to-from))
	n, err := cf.f.ReadAt(buf, sumsOffset(from))
	if err != nil && err != io.EOF {
		return nil, err
	}
	out := make([]uint64, to-from)
	for i := range out {
		if 8*i+8 <= n {
			out[i] = le.Uint64(buf[8*i:])
		} else {
			out[i] = ^s.sums[from+uint32(i)]
		}
	}
	return out, nil
}

// migrateSums writes the checksum file of a legacy store: a header saying
// that payload bytes below legacyPayloadEnd are of the old format, and the
// checksums of every row; then fsyncs it. The caller syncs the folder.
func (s *vectorStore) migrateSums(legacyPayloadEnd uint64) error {
	s.hdr = sumsHeader{Dim: uint32(s.dim), LegacyPayloadEnd: legacyPayloadEnd}
	buf := make([]byte, 0, sumsOffset(s.nrows))
	buf = append(buf, encodeSumsHeader(s.hdr)...)
	for _, sum := range s.sums[:s.nrows] {
		buf = le.AppendUint64(buf, sum)
	}
	cf, err := s.files.acquire(s.sumsPath)
	if err != nil {
		return err
	}
	defer s.files.release(cf)
	if _, err := cf.f.WriteAt(buf, 0); err != nil {
		return err
	}
	if err := cf.f.Sync(); err != nil {
		return err
	}
	s.legacy = false
	s.sumsSynced.size = int64(len(buf))
	return nil
}
