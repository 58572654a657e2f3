package engine

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/memrl/memrl/engine/record"
	"github.com/memrl/memrl/wal"
)

// Atomic groups: the writes of a transaction reach the log as one unit.
//
// A server runs a MULTI/EXEC transaction as a sequence of ordinary write
// calls, each logged and applied as it runs. Without more, a crash in the
// middle keeps a durable prefix of them: "MEM.DEL KEY k" survives while
// the "MEM.ADD … KEY k" queued after it does not, and k is lost. A Group
// makes the transaction's records all-or-nothing at replay, as Redis's
// AOF does with MULTI/EXEC:
//
//	g := db.BeginGroup(names) // the collections the transaction names
//	... the transaction's writes (logged as members of g) ...
//	t, err := g.Commit()      // logs the commit record; wait for t
//
// While g is open, every record logged for a collection it names is
// wrapped in a recGroupMember record carrying g's id; Commit logs a
// recGroupCommit record with the number of members and a checksum over
// them. Replay holds members back until their group's commit record and
// applies them, in log order, only if the commit is there and its count
// and checksum match the members seen; members of a group without a commit
// (the process died first) are dropped, and an abort record is logged so
// that the next recovery does not hold the rest of the log back behind
// them. Records are logged and applied as they run (nothing is buffered
// in memory), each keeps its own LSN (tickets, history, checkpoints work
// as for any record), and records of other collections may interleave
// with a group's: replay keeps them in log order (see groupReplay).
//
//	recGroupMember  gid u64 | inner record (any type but the three below)
//	recGroupCommit  gid u64 | count u32 | sum u64
//	recGroupAbort   gid u64
//
//	sum = Σ xxhash64(inner) over the members, mod 2^64 (a sum, not a chain,
//	      so that members logged by concurrent writers of the group's
//	      collections need no order among themselves)
//
// These are new record types: a log without groups is read as before; a
// build older than them refuses a log holding one (an unknown type), as
// it refuses any newer record.
//
// Checkpoints: a checkpoint copies the collections fuzzily while writes go
// on, so a copy taken while a group is open could hold part of the
// group, and if the group never commits no replay can take that part
// back out. A checkpoint therefore holds groups.excl exclusively from
// before it takes its log position until it is committed, and every open
// group holds it shared: no checkpoint sees an open group, and its
// position is never inside one.
// REQUIRES (of the caller): a goroutine holding an open group does not
// checkpoint or compact (it would wait for its own group); the server
// runs a transaction holding MEM.CHECKPOINT or MEM.COMPACT without a
// group.
//
// The bodies' codecs are package record's (engine/record/group.go).
const (
	recGroupMember = record.TypeGroupMember
	recGroupCommit = record.TypeGroupCommit
	recGroupAbort  = record.TypeGroupAbort
)

// groupMemberHeader is the size of a member record before its inner record.
const groupMemberHeader = record.GroupMemberHeader

// groupState is the DB's book of open groups.
type groupState struct {
	// excl is held shared by every open group, from BeginGroup to Commit,
	// and exclusively by a checkpoint (see above). Lock order: excl before
	// ckptMu, db.mu and every collection lock.
	excl sync.RWMutex
	// open counts open groups, so that a write with none open (nearly
	// every write) does not take mu.
	open atomic.Int32
	// mu guards byName.
	mu sync.Mutex
	// byName maps a collection name to the open group that enlisted it.
	byName map[string]*Group
	// seq is the last group id given out. Ids must not repeat across
	// restarts while the log still holds an older group's members, so
	// Open starts it past every id replay saw and past the clock.
	seq atomic.Uint64
}

// Group is an open atomic group (see above). Its methods may be called
// from any goroutine.
type Group struct {
	db    *DB
	id    uint64
	names []string
	// mu guards closed, n and sum, and is held across the logging of each
	// member, so that no member is logged after the commit record.
	mu     sync.Mutex
	closed bool
	n      uint32 // members logged
	sum    uint64 // Σ xxhash64 of the members' inner records
}

// BeginGroup opens a group over the collections named (existing or not
// yet created): every record logged for one of them until Commit is a
// member of the group. It waits while a checkpoint is being taken.
// REQUIRES: no other open group names any of the same collections (the
// server's transaction lock ensures it); Commit is called exactly once,
// by the caller, whatever happens in between; no engine lock held.
func (db *DB) BeginGroup(names []string) *Group {
	gs := &db.groups
	gs.excl.RLock()
	g := &Group{db: db, id: gs.seq.Add(1), names: names}
	gs.mu.Lock()
	if gs.byName == nil {
		gs.byName = make(map[string]*Group)
	}
	for _, n := range names {
		if _, taken := gs.byName[n]; !taken {
			gs.byName[n] = g
		}
	}
	gs.open.Add(1)
	gs.mu.Unlock()
	return g
}

// WaitCheckpoint returns once no checkpoint is being taken (a new one
// may start at once). BeginGroup waits for a running checkpoint; a caller
// that will begin a group while holding a lock other goroutines wait for
// calls WaitCheckpoint first, without that lock, so that they rarely wait
// for a whole checkpoint.
func (db *DB) WaitCheckpoint() {
	db.groups.excl.RLock()
	db.groups.excl.RUnlock() //nolint:staticcheck // a barrier: nothing to guard
}

// Commit logs the group's commit record (none if no member was logged)
// and closes the group; records logged later are ordinary ones. It returns
// the ticket to wait for before acknowledging any of the group's writes:
// until it is durable, a crash drops every member.
//
// An error means the log failed (or the database is closed): the members
// are applied in memory but may not survive a restart, as with any write
// whose wait fails. The group is closed either way.
func (g *Group) Commit() (Ticket, error) {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return 0, nil
	}
	g.closed = true
	var lsn wal.LSN
	var err error
	if g.n > 0 {
		lsn, err = g.db.log.Enqueue(encodeGroupCommit(g.id, g.n, g.sum))
	}
	g.mu.Unlock()
	gs := &g.db.groups
	gs.mu.Lock()
	for _, n := range g.names {
		if gs.byName[n] == g {
			delete(gs.byName, n)
		}
	}
	gs.open.Add(-1)
	gs.mu.Unlock()
	gs.excl.RUnlock()
	return Ticket(lsn), err
}

// Members returns how many records the group has logged so far.
func (g *Group) Members() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return int(g.n)
}

// groupOf returns the open group that enlisted collection name, or nil.
func (db *DB) groupOf(name string) *Group {
	gs := &db.groups
	if gs.open.Load() == 0 {
		return nil
	}
	gs.mu.Lock()
	g := gs.byName[name]
	gs.mu.Unlock()
	return g
}

// logFor logs rec, a record of the collection named name, as a member of
// that collection's open group if it has one. Every record of a collection
// is logged through it (or logBatchFor).
func (db *DB) logFor(name string, rec []byte) (wal.LSN, error) {
	if g := db.groupOf(name); g != nil {
		return g.log(rec)
	}
	return db.log.Enqueue(rec)
}

// logBatchFor is logFor for wal.Log.EnqueueBatch.
func (db *DB) logBatchFor(name string, recs [][]byte) (wal.LSN, error) {
	if g := db.groupOf(name); g != nil {
		return g.logBatch(recs)
	}
	return db.log.EnqueueBatch(recs)
}

func (g *Group) log(rec []byte) (wal.LSN, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return g.db.log.Enqueue(rec)
	}
	lsn, err := g.db.log.Enqueue(encodeGroupMember(g.id, rec))
	if err == nil {
		g.n++
		g.sum += xxhash.Sum64(rec)
	}
	return lsn, err
}

func (g *Group) logBatch(recs [][]byte) (wal.LSN, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return g.db.log.EnqueueBatch(recs)
	}
	wrapped := make([][]byte, len(recs))
	for i, r := range recs {
		wrapped[i] = encodeGroupMember(g.id, r)
	}
	lsn, err := g.db.log.EnqueueBatch(wrapped)
	if err == nil {
		for _, r := range recs {
			g.n++
			g.sum += xxhash.Sum64(r)
		}
	}
	return lsn, err
}

// startGroupSeq sets the next group ids past seen (the largest replay saw)
// and past the clock, so that a restarted process never reuses the id of
// a group whose members the log still holds.
func (db *DB) startGroupSeq(seen uint64) {
	db.groups.seq.Store(max(seen, uint64(time.Now().UnixNano())))
}

// The group records' codecs are package record's; these are the engine's
// names for them.

func encodeGroupMember(gid uint64, rec []byte) []byte { return record.EncodeGroupMember(gid, rec) }

func encodeGroupCommit(gid uint64, n uint32, sum uint64) []byte {
	return record.EncodeGroupCommit(record.GroupCommit{GID: gid, N: n, Sum: sum})
}

func encodeGroupAbort(gid uint64) []byte { return record.EncodeGroupAbort(gid) }

// isGroupRec reports whether t is one of the group record types, which a
// member never wraps.
func isGroupRec(t byte) bool { return record.IsGroup(t) }

// decodeGroupMember returns a member's group id and inner record (aliasing b).
func decodeGroupMember(b []byte) (uint64, []byte, error) { return record.DecodeGroupMember(b) }

type groupCommitRec struct {
	gid uint64
	n   uint32
	sum uint64
}

func decodeGroupCommit(b []byte) (groupCommitRec, error) {
	r, err := record.DecodeGroupCommit(b)
	return groupCommitRec{gid: r.GID, n: r.N, sum: r.Sum}, err
}

func decodeGroupAbort(b []byte) (uint64, error) { return record.DecodeGroupAbort(b) }
