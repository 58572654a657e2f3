package engine

import (
	"container/list"
	"errors"
	"fmt"
	"sync"
	"syscall"

	"github.com/memrl/memrl/vfs"
)

// DefaultMaxOpenFiles is the default of Options.MaxOpenFiles: how many
// collection files (vectors, their checksums, payloads) the database keeps
// open at once. It leaves most of a common 1024-descriptor limit to the
// log, the checkpoint and the server's connections.
const DefaultMaxOpenFiles = 256

// fileCache keeps a bounded number of the collections' files open, least
// recently used first to go. A collection's files are opened when an
// operation needs them (a write, a payload read, a checkpoint's sync) and
// stay open until the cap makes room for others, so a database may hold
// any number of collections with a bounded number of descriptors. Vector
// reads need none: they go through a mapping, which outlives its
// descriptor.
//
// A file in use (acquired and not yet released) is never closed, so more
// than max files are open only while more than max are in use at once.
//
// Closing and reopening a file loses nothing durability needs: fsync
// through any descriptor of a file writes back all its dirty pages, and
// Linux (since 4.16) reports a writeback error not yet seen by anyone to
// the next fsync even through a descriptor opened after the error.
type fileCache struct {
	fs  vfs.FS
	max int

	// mu guards files, idle and the refs and elem of every cachedFile.
	// Opens and closes happen under it, so a path is never open twice.
	mu    sync.Mutex
	files map[string]*cachedFile
	idle  list.List // of *cachedFile with refs == 0; least recently used at the front
}

// cachedFile is an open file of the cache.
type cachedFile struct {
	path string
	f    vfs.File
	refs int           // acquisitions not yet released
	elem *list.Element // its place in idle while refs == 0, else nil
}

func newFileCache(fs vfs.FS, max int) *fileCache {
	return &fileCache{fs: fs, max: max, files: make(map[string]*cachedFile)}
}

// isFDExhausted reports whether err says the process (EMFILE) or the system
// (ENFILE) has no descriptor left.
func isFDExhausted(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// fdError wraps err in ErrTooManyOpenFiles when it says descriptors ran
// out, for the file-system calls outside the cache (a folder's fsync opens
// the folder).
func fdError(err error) error {
	if err != nil && isFDExhausted(err) && !errors.Is(err, ErrTooManyOpenFiles) {
		return fmt.Errorf("%w: %w", ErrTooManyOpenFiles, err)
	}
	return err
}

// acquire returns the open file at path, opening it (creating it empty if
// absent) when it is not open. The caller must release it, and must not use
// the file after releasing it: an idle file may be closed at any time.
//
// When the process is out of descriptors, acquire closes idle files and
// tries again; if none is left to close it fails with ErrTooManyOpenFiles.
// Nothing else is affected: the log keeps its own descriptors.
func (fc *fileCache) acquire(path string) (*cachedFile, error) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if cf, ok := fc.files[path]; ok {
		if cf.refs == 0 {
			fc.idle.Remove(cf.elem)
			cf.elem = nil
		}
		cf.refs++
		return cf, nil
	}
	for len(fc.files) >= fc.max && fc.evictLocked() {
	}
	for {
		f, err := fc.fs.OpenReadWrite(path)
		if err == nil {
			cf := &cachedFile{path: path, f: f, refs: 1}
			fc.files[path] = cf
			return cf, nil
		}
		if !isFDExhausted(err) {
			return nil, err
		}
		if !fc.evictLocked() {
			return nil, fmt.Errorf("%w: %w", ErrTooManyOpenFiles, err)
		}
	}
}

// release ends an acquisition.
func (fc *fileCache) release(cf *cachedFile) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	cf.refs--
	if cf.refs > 0 {
		return
	}
	if fc.files[cf.path] != cf {
		// forget ran while it was in use; it is ours to close.
		cf.f.Close()
		return
	}
	cf.elem = fc.idle.PushBack(cf)
	for len(fc.files) > fc.max && fc.evictLocked() {
	}
}

// evictLocked closes the least recently used idle file and reports whether
// there was one. A close error is ignored: the file was synced by whoever
// needed it durable, and a failed writeback is reported by the next fsync
// of the file (see fileCache).
// REQUIRES: fc.mu held.
func (fc *fileCache) evictLocked() bool {
	e := fc.idle.Front()
	if e == nil {
		return false
	}
	cf := fc.idle.Remove(e).(*cachedFile)
	cf.elem = nil
	delete(fc.files, cf.path)
	cf.f.Close()
	return true
}

// forget closes the file at path if it is open (at its last release, if in
// use), so that the file can be removed without a descriptor keeping its
// space.
func (fc *fileCache) forget(path string) error {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	cf, ok := fc.files[path]
	if !ok {
		return nil
	}
	delete(fc.files, path)
	if cf.refs > 0 {
		return nil // release closes it
	}
	fc.idle.Remove(cf.elem)
	cf.elem = nil
	return cf.f.Close()
}

// openCount returns how many files are open, for tests.
func (fc *fileCache) openCount() int {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return len(fc.files)
}
