package vfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ErrLocked is returned (wrapped) by FS.Lock when another holder has the
// lock: on the OS another process (or another open of this process), on a
// MemFS an unreleased Lock of the same name.
var ErrLocked = errors.New("vfs: file is locked")

// Lock implements FS with flock(2) on name, created if missing. The lock
// is released when the returned Closer is closed or the process exits
// (kill -9 included).
func (OSFS) Lock(name string) (io.Closer, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: %s: %w", ErrLocked, name, err)
	}
	return f, nil
}

// Lock implements FS. MemFS locks are names held in memory: no file is
// created and no mutating operation counted, so that crash tests see the
// same operations as before locks went through the FS. Crash returns a
// MemFS with no locks held (the crashed process held them).
func (m *MemFS) Lock(name string) (io.Closer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	clean := filepath.Clean(name)
	if _, ok := m.dirs[filepath.Dir(clean)]; !ok {
		return nil, &fs.PathError{Op: "lock", Path: name, Err: fs.ErrNotExist}
	}
	if m.locks[clean] {
		return nil, fmt.Errorf("%w: %s", ErrLocked, name)
	}
	if m.locks == nil {
		m.locks = make(map[string]bool)
	}
	m.locks[clean] = true
	return &memLock{fs: m, name: clean}, nil
}

// memLock is a held MemFS lock.
type memLock struct {
	fs   *MemFS
	name string
	// done is guarded by fs.mu.
	done bool
}

// Close releases the lock. Closing twice is an error, as for a file.
func (l *memLock) Close() error {
	l.fs.mu.Lock()
	defer l.fs.mu.Unlock()
	if l.done {
		return &fs.PathError{Op: "unlock", Path: l.name, Err: fs.ErrClosed}
	}
	l.done = true
	delete(l.fs.locks, l.name)
	return nil
}
