package wal

import (
	"fmt"
	"time"

	"github.com/memrl/memrl/vfs"
)

// SyncPolicy says when Append returns relative to durability, and so what
// an acknowledged record survives:
//
//	policy    Append returns once the record is   survives a process kill   survives a machine crash
//	always    fsynced                            yes                       yes
//	interval  written to the OS; fsync every     yes                       all but the last interval
//	          Options.SyncInterval
//	none      written to the OS; never fsynced   yes                       only what the OS flushed
//
// Under every policy each record is handed to the operating system (a
// write call) before Append returns, as Redis's appendfsync does: killing
// the process (kill -9, a panic, the OOM killer) loses nothing
// acknowledged, because the kernel holds the written pages. Only a crash of
// the machine or the kernel (power loss) can lose records that were not
// fsynced. Segment rolls, Sync, Rotate and Close fsync under every policy
// (recovery relies on every segment but the last being complete on disk).
//
// The zero value is SyncAlways, so that a zero Options is the safe one.
type SyncPolicy int

const (
	// SyncAlways: Append returns once the record is fsynced. Concurrent
	// appenders are group-committed: one write and one fsync per batch.
	// Survives a process kill and a machine crash.
	SyncAlways SyncPolicy = iota
	// SyncInterval: Append returns once the record is written to the
	// operating system; a timer fsyncs every Options.SyncInterval.
	// Survives a process kill; a machine crash can lose the last
	// interval's records.
	SyncInterval
	// SyncNone: Append returns once the record is written to the
	// operating system, and nothing fsyncs it (the kernel writes it back
	// in its own time). Concurrent appenders share one write call per
	// batch. Survives a process kill; a machine crash can lose whatever
	// the kernel had not yet written back.
	SyncNone
)

// String returns the name ParseSyncPolicy accepts.
func (p SyncPolicy) String() string {
	switch p {
	case SyncAlways:
		return "always"
	case SyncInterval:
		return "interval"
	case SyncNone:
		return "none"
	}
	return fmt.Sprintf("SyncPolicy(%d)", int(p))
}

// ParseSyncPolicy parses "always", "interval" or "none".
func ParseSyncPolicy(s string) (SyncPolicy, error) {
	switch s {
	case "always":
		return SyncAlways, nil
	case "interval":
		return SyncInterval, nil
	case "none":
		return SyncNone, nil
	}
	return 0, fmt.Errorf("wal: unknown sync policy %q (want always, interval or none)", s)
}

// Defaults for zero Options fields.
const (
	DefaultSyncInterval = 10 * time.Millisecond
	DefaultSegmentSize  = 64 << 20
)

// Options configure Open.
type Options struct {
	// FS is the file system; nil means vfs.Default.
	FS vfs.FS
	// Dir is the directory holding the segment files. It is created if
	// missing. Files in it not named like segments are ignored.
	Dir string
	// Sync is the durability policy; the zero value is SyncAlways.
	Sync SyncPolicy
	// SyncInterval is the fsync period for SyncInterval; <= 0 means
	// DefaultSyncInterval.
	SyncInterval time.Duration
	// SegmentSize is the size past which the log rolls to a new segment
	// file; <= 0 means DefaultSegmentSize. A record larger than it gets a
	// segment of its own.
	SegmentSize int64
	// From, if non-zero, is the LSN from which the caller needs the log:
	// the records below it are held elsewhere (the engine's checkpoint).
	// Open refuses, with a *GapError (ErrGap) and nothing changed on
	// disk, a log that does not hold every record from From on: one that
	// ends below From or starts above it (gap.go). 0 means no such check.
	From LSN
	// AcceptGap, if set, is asked about such a gap before anything changes
	// on disk; if it returns true Open goes on and reports the gap in
	// RecoveryReport.Gap. A log that ends below From is then restarted
	// at From: its segments (all their records are below From) are
	// removed and a new one starts at From, so that no record appended
	// later is numbered below From, where a replay from From would skip
	// it.
	AcceptGap func(*GapError) bool
}

// withDefaults returns o with zero fields defaulted, or an error for
// invalid fields.
func (o Options) withDefaults() (Options, error) {
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.Dir == "" {
		return o, fmt.Errorf("wal: Options.Dir is empty")
	}
	switch o.Sync {
	case SyncAlways, SyncInterval, SyncNone:
	default:
		return o, fmt.Errorf("wal: invalid sync policy %d", int(o.Sync))
	}
	if o.SyncInterval <= 0 {
		o.SyncInterval = DefaultSyncInterval
	}
	if o.SegmentSize <= 0 {
		o.SegmentSize = DefaultSegmentSize
	}
	return o, nil
}
