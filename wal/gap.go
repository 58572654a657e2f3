package wal

import "github.com/memrl/memrl/vfs"

// A gap between the caller's checkpoint and the log.
//
// The engine replays the log from its checkpoint's LSN (Options.From).
// Normally the log holds every record from there on: the checkpoint
// fsyncs the log before it commits, and RemoveBefore removes only
// segments wholly below it. A log that ends below From (wal/ emptied,
// truncated, restored from an older copy) or starts above it (its oldest
// segments lost) has lost records, and used to be accepted silently; worse,
// a log that ended below From numbered new records below From, so that the
// next replay skipped them: acknowledged writes vanished at the next
// restart and their memory ids were handed out again.
//
// So Open refuses such a log unless Options.AcceptGap accepts it, and an
// accepted log that ends below From is restarted at From.

// checkGap returns the gap between opts.From and the log rec describes,
// or nil. A gap Options.AcceptGap does not accept is returned as the
// error, nothing changed on disk. An accepted gap where the log ends
// below From has its segments removed (the caller then starts the log at
// From).
// REQUIRES: called by Open before anything else changed on disk.
func checkGap(fs vfs.FS, dir string, rec *recovery, opts Options) (*GapError, error) {
	if opts.From == 0 {
		return nil, nil
	}
	first := rec.next
	if len(rec.segments) > 0 {
		first = rec.segments[0].base
	}
	if rec.next >= opts.From && first <= opts.From {
		return nil, nil
	}
	g := &GapError{From: opts.From, First: first, Next: rec.next}
	if opts.AcceptGap == nil || !opts.AcceptGap(g) {
		return nil, g
	}
	if rec.next < opts.From {
		if err := removeSegments(fs, dir, rec); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// removeSegments removes every segment file rec found, oldest first, so
// that a crash midway leaves a contiguous log (which the next Open finds
// ending below From again), and makes the removals durable.
func removeSegments(fs vfs.FS, dir string, rec *recovery) error {
	for _, s := range rec.segments {
		if err := fs.Remove(s.path); err != nil {
			return err
		}
	}
	if t := rec.torn; t != nil && t.Removed {
		if err := fs.Remove(t.File); err != nil {
			return err
		}
	}
	return fs.SyncDir(dir)
}
