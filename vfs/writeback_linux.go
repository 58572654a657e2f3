package vfs

import "golang.org/x/sys/unix"

// WriteBack implements WriteBacker with sync_file_range(2): wait for any
// write-back already under way in the range, start writing its dirty
// pages, and wait for that to finish. It syncs no metadata and does not
// flush the device cache, so it proves nothing about durability.
func (f osFile) WriteBack(off, n int64) error {
	const flags = unix.SYNC_FILE_RANGE_WAIT_BEFORE | unix.SYNC_FILE_RANGE_WRITE | unix.SYNC_FILE_RANGE_WAIT_AFTER
	return unix.SyncFileRange(int(f.Fd()), off, n, flags)
}

var _ WriteBacker = osFile{}
