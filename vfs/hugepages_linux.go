package vfs

import "golang.org/x/sys/unix"

func adviseHugePages(b []byte) { _ = unix.Madvise(b, unix.MADV_HUGEPAGE) }

// DropCache implements CacheDropper with posix_fadvise(POSIX_FADV_DONTNEED)
// over the whole file.
func (f osFile) DropCache() error {
	return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}

var _ CacheDropper = osFile{}
