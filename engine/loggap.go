package engine

import (
	"fmt"

	"github.com/memrl/memrl/wal"
)

// A write-ahead log that does not reach back to the checkpoint.
//
// Recovery replays the log from the checkpoint's LSN. If the log ends
// below it (wal/ emptied, truncated or restored from an older copy) or
// starts above it (its oldest segments lost), records are missing: Open
// refuses the database with ErrLogGap, naming the LSNs, unless
// Options.AcceptLogGap (memrl serve --accept-log-gap). This used to pass
// silently, and a log that ended below the checkpoint numbered new records
// below it, where the next replay skipped them: every acknowledged write
// after such an open vanished at the next restart (0 of 10 survived a
// kill -9) and its id was handed out again.
//
// An accepted gap is logged as a WARNING and reported in Recovery.LogGap.
// The log then continues above the checkpoint (wal.Options.AcceptGap
// restarts a log that ended below it at the checkpoint's LSN), so that
// everything acknowledged from then on survives a crash, and without
// another option: the log now reaches back to the checkpoint. A log that
// starts above the checkpoint is replayed from its first record and a
// full checkpoint is taken before Open returns, for the same reason.
// Memory ids and collection uids skip ahead by logGapIDSkip: the missing
// records may have handed out ids the checkpoint does not know, and an id
// must never name two memories.
//
// A replica installing a raft snapshot (package replica) opens a full
// checkpoint without its log, by design: Options.RestoredSnapshot makes
// an empty log there the expected start, not a gap.

// logGapIDSkip is how far memory ids and collection uids skip ahead after
// an accepted gap: more than the adds any lost stretch of log could hold.
const logGapIDSkip = 1 << 32

// errLogGapHint follows a refused gap: how to open anyway.
const errLogGapHint = "; to open the database without them (if no copy of the log can be put back), " +
	"set Options.AcceptLogGap (memrl serve --accept-log-gap)"

// restoredStart reports whether g is a restored snapshot's absent log:
// an empty log below a checkpoint that covers every record.
func (db *DB) restoredStart(g *wal.GapError) bool {
	return db.opts.RestoredSnapshot && g.First == g.Next && g.Next < g.From
}

// acceptLogGap is wal.Options.AcceptGap: the gaps Open goes on over.
func (db *DB) acceptLogGap(g *wal.GapError) bool {
	return db.opts.AcceptLogGap || db.restoredStart(g)
}

// afterLogGapLocked reports an accepted gap and moves the ids past any
// the missing records could have used. REQUIRES: called by recover after
// replay (no concurrent use of db).
func (db *DB) afterLogGapLocked(g *wal.GapError, next wal.LSN) {
	if db.restoredStart(g) {
		return
	}
	db.Recovery.LogGap = g.Error()
	db.opts.Logf("memrl: recovery: WARNING: %v; accepted (AcceptLogGap): the missing records are lost; "+
		"new records are numbered from LSN %d, memory ids and collection uids skip ahead by %d", g, next, logGapIDSkip)
	db.nextUID += logGapIDSkip
	for _, c := range db.byUID {
		c.nextID = min(c.nextID, MaxID+1-logGapIDSkip) + logGapIDSkip
	}
}

// wrapLogGap adds the way out to a refused gap.
func wrapLogGap(err error) error {
	return fmt.Errorf("engine: %w%s", err, errLogGapHint)
}
