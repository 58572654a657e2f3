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
	// ErrGap is wrapped by the *GapError Open returns when the log does
	// not reach back to Options.From.
	ErrGap = errors.New("wal: the log does not reach back to the checkpoint")
)

// GapError reports a log that does not hold every record from From on:
// its records run from First to Next-1 (none when First == Next), and
// either it ends below From (Next < From: emptied, truncated, or an older
// copy) or it starts above it (First > From: its oldest segments are
// gone). The records in Missing are not in the log.
type GapError struct {
	From, First, Next LSN
}

// Missing returns the first and last LSN the log should hold from From
// and does not; when the log ends below From, the last is unknown and
// returned as 0 (records from From on may or may not have existed; those
// below From are the caller's checkpoint's).
func (e *GapError) Missing() (first, last LSN) {
	if e.Next < e.From {
		return e.From, 0
	}
	return e.From, e.First - 1
}

func (e *GapError) Error() string {
	if e.Next < e.From {
		holds := fmt.Sprintf("it holds LSNs %d to %d", e.First, e.Next-1)
		if e.First == e.Next {
			holds = fmt.Sprintf("it holds no record, next LSN %d", e.Next)
		}
		return fmt.Sprintf("wal: log gap: the checkpoint needs the log from LSN %d, but the log ends before it "+
			"(%s): it was emptied, truncated or restored from an older copy, "+
			"and records from LSN %d on, if there were any, are lost", e.From, holds, e.From)
	}
	return fmt.Sprintf("wal: log gap: the checkpoint needs the log from LSN %d, but its oldest record is LSN %d: "+
		"records %d to %d are missing", e.From, e.First, e.From, e.First-1)
}

// Unwrap makes errors.Is(err, ErrGap) true.
func (e *GapError) Unwrap() error { return ErrGap }

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
