package wal

import (
	"errors"
	"fmt"
)

// Sentinel errors. Test for them with errors.Is.
var (
	// ErrClosed is returned by operations on a Log after Close.
	ErrClosed = errors.New("wal: log closed")
	// ErrFailed is wrapped by every error returned after a write or
	// fsync of the log failed. The failure is sticky: the log never
	// retries, and no record is acknowledged after it. The error also
	// wraps the underlying I/O error. Reopen the log (after fixing the
	// cause) to recover what is durable.
	ErrFailed = errors.New("wal: log failed")
	// ErrRecordTooLarge is returned by Append for a record longer than
	// MaxRecordSize. Nothing is logged.
	ErrRecordTooLarge = errors.New("wal: record too large")
	// ErrCompacted is returned by Replay when records at or after the
	// requested LSN were already removed by RemoveBefore.
	ErrCompacted = errors.New("wal: requested records were removed")
)

// CorruptionError reports damage that is not a torn tail: a record or
// segment header that fails verification but is followed by valid data,
// damage in a segment other than the last, or an inconsistent sequence of
// segments. Open refuses to open such a log and changes nothing.
type CorruptionError struct {
	File   string // path of the damaged segment file
	Offset int64  // byte offset of the damaged record or header in File
	Reason string
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("wal: corruption in %s at offset %d: %s", e.File, e.Offset, e.Reason)
}

// failure wraps an I/O error as the log's sticky failure.
func failure(op string, err error) error {
	return fmt.Errorf("%w: %s: %w", ErrFailed, op, err)
}
