package engine

import "fmt"

// payloadStore is a collection's append-only payload file. A memory's
// payload is the bytes [off, off+len) of the file; the memory table holds
// off and len. Like the vector file it has no header and is derived data:
// the log holds every payload and a checkpoint records the synced size.
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

	synced syncMark // how much of the file a checkpoint has synced
}

func openPayloadStore(files *fileCache, path string, size uint64) (*payloadStore, error) {
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
	return &payloadStore{files: files, path: path, size: size, synced: syncMark{int64(size)}}, nil
}

// put writes p at off and extends size past it.
func (s *payloadStore) put(off uint64, p []byte) error {
	if len(p) == 0 {
		return nil
	}
	cf, err := s.files.acquire(s.path)
	if err != nil {
		return err
	}
	defer s.files.release(cf)
	if _, err := cf.f.WriteAt(p, int64(off)); err != nil {
		return err
	}
	s.size = max(s.size, off+uint64(len(p)))
	return nil
}

func (s *payloadStore) get(off uint64, n uint32) ([]byte, error) {
	p := make([]byte, n)
	if n == 0 {
		return p, nil
	}
	cf, err := s.files.acquire(s.path)
	if err != nil {
		return nil, err
	}
	defer s.files.release(cf)
	if _, err := cf.f.ReadAt(p, int64(off)); err != nil {
		return nil, fmt.Errorf("engine: read payload: %w", err)
	}
	return p, nil
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
