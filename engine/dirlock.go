package engine

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/memrl/memrl/vfs"
)

// dirLock is an exclusive lock on dir/LOCK (flock on the OS's file system,
// an in-memory lock on vfs.MemFS), so that two processes never open one
// database: both would append to one log.
type dirLock struct{ c io.Closer }

// lockDir locks dir through fs.
func lockDir(fs vfs.FS, dir string) (*dirLock, error) {
	c, err := fs.Lock(filepath.Join(dir, "LOCK"))
	if errors.Is(err, vfs.ErrLocked) {
		return nil, fmt.Errorf("engine: database %s is in use by another process: %w", dir, err)
	}
	if err != nil {
		return nil, err
	}
	return &dirLock{c: c}, nil
}

func (l *dirLock) release() {
	if l.c != nil {
		l.c.Close()
		l.c = nil
	}
}
