package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/memrl/memrl/vfs"
)

// dirLock is an exclusive advisory lock (flock) on dir/LOCK, so that two
// processes never open one database: both would append to one log.
type dirLock struct{ f *os.File }

// lockDir locks dir. File systems other than the OS's (tests) need no lock.
func lockDir(fs vfs.FS, dir string) (*dirLock, error) {
	if _, ok := fs.(vfs.OSFS); !ok {
		return &dirLock{}, nil
	}
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("engine: database %s is in use by another process: %w", dir, err)
	}
	return &dirLock{f: f}, nil
}

func (l *dirLock) release() {
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
}
