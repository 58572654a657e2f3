//go:build linux

package vfs

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// allocResident maps n bytes (a multiple of HugePage) of private anonymous
// memory aligned on a huge page and advises MADV_HUGEPAGE, so that under
// transparent huge pages "always" or "madvise" (Debian's default) it is
// held in 2 MB pages. The advice failing (a kernel without THP) leaves
// 4 KB pages: slower, not wrong.
//
// MAP_NORESERVE: callers reserve ahead of use (the engine's vector rows
// four times what they need), and untouched pages should not count
// against the commit limit.
func allocResident(size int64) ([]byte, func() error, error) {
	n := uintptr(size)
	// Map a huge page more than needed and unmap both ends, so that the
	// memory starts on a huge-page boundary whatever address the kernel
	// picks.
	raw, err := unix.MmapPtr(-1, 0, nil, n+HugePage, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, nil, fmt.Errorf("vfs: reserving %d bytes of memory: %w", n, err)
	}
	base := uintptr(raw)
	head := (HugePage - base%HugePage) % HugePage
	tail := HugePage - head
	if head > 0 {
		if err := unix.MunmapPtr(raw, head); err != nil {
			unix.MunmapPtr(raw, n+HugePage)
			return nil, nil, err
		}
	}
	p := unsafe.Add(raw, head)
	if tail > 0 {
		if err := unix.MunmapPtr(unsafe.Add(p, n), tail); err != nil {
			unix.MunmapPtr(p, n+tail)
			return nil, nil, err
		}
	}
	b := unsafe.Slice((*byte)(p), n)
	_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
	return b, func() error { return unix.MunmapPtr(p, n) }, nil
}
