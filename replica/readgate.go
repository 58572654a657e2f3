package replica

import (
	"errors"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/memrl/memrl/server"
)

// Follower reads (docs/CLUSTER.md "Reads"). A follower serves a READONLY
// connection's reads from its own state, which may lag its leader's. Two
// rules keep that lag honest:
//
//  1. Never back in time. A restarted node rebuilds its engine from its
//     latest raft snapshot and then applies the log after it, which it
//     may only do once a leader tells it the commit index. Until the
//     engine has again applied everything the node had applied before it
//     stopped (its read floor), reads answer -LOADING.
//  2. Not while cut off. A follower that has heard nothing from a leader
//     for longer than Config.StaleReadBound, or knows no leader, answers
//     -TRYAGAIN: its state may be arbitrarily old (a partition), and it
//     cannot tell by how much.
//
// The read floor. Reads served before a stop saw the state at applied
// index A_old (the largest the engine reached). The node does not know
// A_old after a crash, so it uses a bound it can read from disk at Open,
// before raft starts:
//
//	floor = max(last index in the raft log, index of the latest snapshot)
//
// INVARIANT: A_old <= floor. An entry is applied only once committed, and
// hashicorp/raft applies only entries in its own log store, which
// raft-boltdb fsyncs before it reports them stored: so the entry at A_old
// was durably in this node's log before it was applied. Raft removes log
// entries in two ways only: compaction behind a snapshot (the snapshot,
// whose index is then >= the removed entries, is on disk first), and a
// follower's tail truncation when a new leader's log conflicts, which
// never touches a committed entry (Leader Completeness). So after any
// crash, either the log still reaches A_old or a snapshot covers it. (The
// commit index the node knew is a tighter bound, but hashicorp/raft does
// not persist it; it lies between A_old and the log's last index.)
//
// Tighter after a clean stop: Close records the applied index in the
// stable store (appliedKey) once raft has stopped, when it is exactly
// A_old; Open uses it instead and clears it before raft starts (so a later
// crash never finds a stale value).
//
// Liveness. The floor may exceed the commit index after a crash: the log
// may end in entries appended but never committed. Two things make sure
// the engine still reaches it. (a) A tail truncation (DeleteRange from an
// index above the log's first, readGateLogStore) proves every entry from
// there on uncommitted, so the floor drops to just below it: still >=
// A_old, since A_old is committed. (b) Entries the state machine never
// sees (a new leader's no-op, a barrier) do not change the state: when
// only such entries lie between the applied index and the floor, the
// floor is reached (onlyNoops). Otherwise the leader's log grows past the
// floor (it proposes RAFT.MAINTAIN every second) and the engine applies it.

// appliedKey is the stable store key where Close records the applied
// index; 0 means none (the node did not stop cleanly, or already used it).
var appliedKey = []byte("memrl_applied_at_close")

// maxNoopScan bounds how many log entries a read looks at to see whether
// only no-ops separate the engine from the read floor.
const maxNoopScan = 64

// readFloor returns the read floor of a node about to start raft on logs
// and snaps (see above), and clears the clean-stop record.
func readFloor(logs raft.LogStore, stable raft.StableStore, snaps raft.SnapshotStore) (uint64, error) {
	clean, err := stable.GetUint64(appliedKey)
	if err != nil && !errors.Is(err, raftboltdb.ErrKeyNotFound) {
		return 0, err
	}
	if clean > 0 {
		// Cleared before raft starts: if this run crashes, its floor must
		// come from the log again.
		if err := stable.SetUint64(appliedKey, 0); err != nil {
			return 0, err
		}
		return clean, nil
	}
	floor, err := logs.LastIndex()
	if err != nil {
		return 0, err
	}
	metas, err := snaps.List()
	if err != nil {
		return 0, err
	}
	for _, m := range metas {
		floor = max(floor, m.Index)
	}
	return floor, nil
}

// lowerFloor lowers the read floor to idx, when a tail truncation proved
// the entries after idx uncommitted.
func (n *Node) lowerFloor(idx uint64) {
	for {
		f := n.floor.Load()
		if idx >= f || n.floor.CompareAndSwap(f, idx) {
			return
		}
	}
}

// reachedFloor reports whether the engine has applied at least what the
// node had applied before it started (rule 1). Once true it stays true.
func (n *Node) reachedFloor() bool {
	if n.floorReached.Load() {
		return true
	}
	floor, a := n.floor.Load(), n.AppliedIndex()
	if a < floor && (floor-a > maxNoopScan || !n.onlyNoops(a+1, floor)) {
		return false
	}
	n.floorReached.Store(true)
	n.log.Info("replica: reached the applied index it had before it started; serving follower reads", "floor", floor)
	return true
}

// onlyNoops reports whether every entry of the log in [lo, hi] is one the
// state machine never applies (a no-op or a barrier), so that the state at
// lo-1 is the state at hi. An entry not in the log gives false.
func (n *Node) onlyNoops(lo, hi uint64) bool {
	var l raft.Log
	for i := lo; i <= hi; i++ {
		if err := n.store.GetLog(i, &l); err != nil {
			return false
		}
		if l.Type != raft.LogNoop && l.Type != raft.LogBarrier {
			return false
		}
	}
	return true
}

// staleReadBound is how long a follower may go without hearing from a
// leader and still serve reads.
func (n *Node) staleReadBound() time.Duration {
	if n.cfg.StaleReadBound > 0 {
		return n.cfg.StaleReadBound
	}
	return 2 * n.heartbeatTimeout
}

// followerRead decides whether this node, not leading, may serve a read
// now (rules 1 and 2 above); nil means yes.
func (n *Node) followerRead() error {
	if !n.reachedFloor() {
		return &server.ReplyError{Code: "LOADING", Msg: "this replica is catching up after a restart (applied index " +
			strconv.FormatUint(n.AppliedIndex(), 10) + " of the " + strconv.FormatUint(n.floor.Load(), 10) +
			" it had reached); read from the leader or retry"}
	}
	if _, ok := n.Leader(); !ok {
		return &server.ReplyError{Code: "TRYAGAIN", Msg: "this replica knows no leader of its shard and its data may be stale; read from the leader or retry"}
	}
	if since := time.Since(n.raft.LastContact()); since > n.staleReadBound() {
		return &server.ReplyError{Code: "TRYAGAIN", Msg: "this replica has not heard from its shard's leader for " +
			since.Round(time.Millisecond).String() + " (bound " + n.staleReadBound().String() +
			") and its data may be stale; read from the leader or retry"}
	}
	return nil
}

// readGateLogStore watches the raft log for tail truncations, which lower
// the read floor (liveness (a) above).
type readGateLogStore struct {
	raft.LogStore
	n *Node
}

func (s readGateLogStore) DeleteRange(lo, hi uint64) error {
	// Compaction always deletes from the log's first index; a conflict
	// deletes a suffix, from above it. A suffix deleted from the very
	// first index (a log with nothing committed past the snapshot) is
	// not told apart from a compaction and leaves the floor as it is,
	// which is safe.
	first, err := s.LogStore.FirstIndex()
	if err := s.LogStore.DeleteRange(lo, hi); err != nil {
		return err
	}
	if err == nil && lo > first && lo > 0 {
		s.n.lowerFloor(lo - 1)
	}
	return nil
}

// recordApplied writes the applied index for the next Open (a clean stop).
// REQUIRES: raft has stopped (nothing applies any more).
func (n *Node) recordApplied() error {
	a := n.AppliedIndex()
	if a == 0 {
		return nil
	}
	if err := n.store.SetUint64(appliedKey, a); err != nil {
		return errors.Join(errors.New("replica: record the applied index"), err)
	}
	return nil
}
