package engine

import (
	"fmt"
	"io"
)

// payloadStore is a collection's append-only payload file. A memory's
// payload is a record at offset off of the file: its len bytes, then
// payloadSumSize bytes of checksum (payloadSum of the memory's id, off and
// the bytes). The memory table holds off and len. Payloads below
// legacyEnd are of the format before checksums, the bytes alone; the
// collection's checksum file says where that format ends (package sumfile).
// Like the vector file it is derived data: the log holds every payload and
// a checkpoint records the synced size.
//
// Every read is verified (get): a record that fails its checksum is an
// ErrCorrupt error, never a payload.
//
// REQUIRES: put with the collection's lock held for writing; get is safe
// concurrently with put (pread of bytes already written).
//
// Like the vector store it holds no descriptor of its own: each call takes
// the file from the database's fileCache.
type payloadStore struct {
	files *fileCache
	path  string
	size  uint64 // bytes in use; the next payload goes here
	// legacyEnd: records below it have no checksum. Set at open (and by
	// recovery's migration of a collection from before checksums, under
	// Open), constant once the database is shared.
	legacyEnd uint64

	synced syncMark // how much of the file a checkpoint has synced
}

func openPayloadStore(files *fileCache, path string, size, legacyEnd uint64) (*payloadStore, error) {
	cf, err := files.acquire(path)
	if err != nil {
		return nil, err
	}
	defer files.release(cf)
	st, err := cf.f.Stat()
	if err != nil {
		return nil, err
	}
	if uint64(st.Size()) < size {
		return nil, fmt.Errorf("engine: payload file %s has %d bytes, the checkpoint needs %d", path, st.Size(), size)
	}
	return &payloadStore{files: files, path: path, size: size, legacyEnd: legacyEnd, synced: syncMark{int64(size)}}, nil
}

// checked reports whether the record at off carries a checksum.
func (s *payloadStore) checked(off uint64) bool { return off >= s.legacyEnd }

// put writes the record of memory id's payload p at off and extends size
// past it.
func (s *payloadStore) put(id, off uint64, p []byte) error {
	rec := p
	if s.checked(off) {
		rec = make([]byte, len(p), len(p)+payloadSumSize)
		copy(rec, p)
		rec = le.AppendUint64(rec, payloadSum(id, off, p))
	}
	if len(rec) == 0 {
		return nil
	}
	cf, err := s.files.acquire(s.path)
	if err != nil {
		return err
	}
	defer s.files.release(cf)
	if _, err := cf.f.WriteAt(rec, int64(off)); err != nil {
		return err
	}
	s.size = max(s.size, off+uint64(len(rec)))
	return nil
}

// get reads and verifies memory id's payload of n bytes at off. A record
// that fails its checksum is an error wrapping ErrCorrupt.
func (s *payloadStore) get(id, off uint64, n uint32) ([]byte, error) {
	if !s.checked(off) && n == 0 {
		return []byte{}, nil
	}
	rn := s.recordLen(off, n)
	cf, err := s.files.acquire(s.path)
	if err != nil {
		return nil, err
	}
	defer s.files.release(cf)
	rec := make([]byte, rn)
	if k, err := cf.f.ReadAt(rec, int64(off)); err != nil {
		if err == io.EOF && s.checked(off) {
			return nil, fmt.Errorf("%w: payload of memory %d (%s, offset %d) is cut short at %d of %d bytes", ErrCorrupt, id, s.path, off, k, rn)
		}
		return nil, fmt.Errorf("engine: read payload: %w", err)
	}
	return s.checkRecord(id, off, n, rec)
}

// recordLen is the length in the file of the record of a payload of n
// bytes at off: n, plus the checksum unless the record is legacy.
func (s *payloadStore) recordLen(off uint64, n uint32) uint64 {
	if s.checked(off) {
		return uint64(n) + payloadSumSize
	}
	return uint64(n)
}

// checkRecord verifies rec, the recordLen(off, n) bytes read at off for
// memory id's payload of n bytes, and returns the payload (a sub-slice of
// rec). A record that fails its checksum is an error wrapping ErrCorrupt.
func (s *payloadStore) checkRecord(id, off uint64, n uint32, rec []byte) ([]byte, error) {
	if !s.checked(off) {
		return rec, nil
	}
	p := rec[:n:n]
	if le.Uint64(rec[n:]) != payloadSum(id, off, p) {
		return nil, fmt.Errorf("%w: payload of memory %d (%s, offset %d) fails its checksum", ErrCorrupt, id, s.path, off)
	}
	return p, nil
}

// readSpan reads bytes [from, to) of the file in one call, for checking
// many records at once (verify.go). A span past the end of the file is
// an error; the caller then reads the records one by one, which names the
// records cut short.
func (s *payloadStore) readSpan(from, to uint64) ([]byte, error) {
	cf, err := s.files.acquire(s.path)
	if err != nil {
		return nil, err
	}
	defer s.files.release(cf)
	buf := make([]byte, to-from)
	if _, err := cf.f.ReadAt(buf, int64(from)); err != nil {
		return nil, err
	}
	return buf, nil
}

// syncTo makes bytes [0, size) durable (see syncMark).
// REQUIRES: the database's ckptMu held; size bytes were written.
func (s *payloadStore) syncTo(size uint64) error {
	cf, err := s.files.acquire(s.path)
	if err != nil {
		return err
	}
	defer s.files.release(cf)
	return s.synced.syncTo(cf.f, int64(size))
}

// close forgets the file: it is closed now, or by its last user.
func (s *payloadStore) close() error { return s.files.forget(s.path) }
