package wal

import "github.com/memrl/memrl/vfs"

// RemoveBefore deletes the segment files that hold only records with
// LSN < lsn. The active segment is never deleted. Records >= lsn are
// always kept, and so may be some below it (those sharing a segment with
// a record >= lsn). The removals are made durable (SyncDir) before it
// returns; they are removed oldest first, so a crash midway leaves a
// contiguous log.
//
// A failed removal is returned but does not fail the log: the segments
// that could not be removed are found again by the next Open.
func (l *Log) RemoveBefore(lsn LSN) error {
	l.removeMu.Lock()
	defer l.removeMu.Unlock()

	l.mu.Lock()
	if err := l.usableLocked(); err != nil {
		l.mu.Unlock()
		return err
	}
	// Segment i holds LSNs [segments[i].base, segments[i+1].base), so it
	// can go when segments[i+1].base <= lsn. The last is active.
	k := 0
	for k+1 < len(l.segments) && l.segments[k+1].base <= lsn {
		k++
	}
	victims := append([]segmentInfo(nil), l.segments[:k]...)
	// Forget them first so Replay no longer opens them. The flusher only
	// appends to l.segments, so removing a prefix is safe.
	l.segments = append([]segmentInfo(nil), l.segments[k:]...)
	l.mu.Unlock()

	if len(victims) == 0 {
		return nil
	}
	// Freed in paced steps once the removals are durable: unlinking 64 MB
	// at once would hold up the fsyncs of the writers appending meanwhile.
	paths := make([]string, len(victims))
	for i, s := range victims {
		paths[i] = s.path
	}
	return vfs.RemoveFilesPaced(l.fs, l.dir, paths)
}
