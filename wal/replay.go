package wal

import (
	"errors"
	"fmt"
	"io"

	"github.com/memrl/memrl/vfs"
)

// Replay calls fn for every record with LSN >= from, in LSN order, and
// returns fn's first error. from == 0 means the first record.
//
// rec is valid only during the call; fn must copy what it keeps.
// Replay is meant to be called after Open and before Append. Called
// later, it reads the records written to segment files when it started
// (records enqueued but not yet waited for may not be written yet).
//
// If records at or after from were removed by RemoveBefore, Replay
// returns ErrCompacted without calling fn. Damage found while reading is
// returned as a *CorruptionError.
func (l *Log) Replay(from LSN, fn func(lsn LSN, rec []byte) error) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	segs := append([]segmentInfo(nil), l.segments...)
	limit := l.writtenLSN
	l.mu.Unlock()

	if from == 0 {
		from = 1
	}
	if len(segs) == 0 || from >= limit {
		return nil
	}
	if from < segs[0].base {
		return fmt.Errorf("%w: asked for LSN %d, oldest retained is %d", ErrCompacted, from, segs[0].base)
	}
	// Start at the last segment whose first LSN is <= from.
	start := 0
	for i := range segs {
		if segs[i].base <= from {
			start = i
		}
	}
	for _, s := range segs[start:] {
		if s.base >= limit {
			break
		}
		done, err := replaySegment(l.fs, s, from, limit, fn)
		if err != nil || done {
			return err
		}
	}
	return nil
}

// replaySegment calls fn for the records of s with from <= LSN < limit.
// It reports done when it reached limit.
func replaySegment(fs vfs.FS, s segmentInfo, from, limit LSN, fn func(LSN, []byte) error) (bool, error) {
	sr, state, reason, err := openSegmentReader(fs, s.path)
	if err != nil {
		return false, err
	}
	if state != headerOK {
		return false, &CorruptionError{File: s.path, Offset: 0, Reason: reason}
	}
	defer sr.close()
	if sr.hdr.base != s.base || sr.hdr.num != s.num {
		return false, &CorruptionError{File: s.path, Offset: 0,
			Reason: fmt.Sprintf("segment header changed since Open (segment %d base %d)", sr.hdr.num, sr.hdr.base)}
	}
	for {
		if sr.next >= limit {
			return true, nil
		}
		lsn, rec, err := sr.read()
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		var bad *badRecord
		if errors.As(err, &bad) {
			return false, &CorruptionError{File: s.path, Offset: bad.off, Reason: bad.reason}
		}
		if err != nil {
			return false, err
		}
		if lsn < from {
			continue
		}
		if err := fn(lsn, rec); err != nil {
			return false, err
		}
	}
}
