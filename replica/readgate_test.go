package replica

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// TestReadFloor: the floor is the raft log's last index (or the latest
// snapshot's, if later), unless a clean stop recorded the applied index;
// that record is used once.
func TestReadFloor(t *testing.T) {
	dir := t.TempDir()
	store, err := raftboltdb.NewBoltStore(filepath.Join(dir, "raft.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	snaps := raft.NewInmemSnapshotStore()
	floor := func() uint64 {
		t.Helper()
		f, err := readFloor(store, store, snaps)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	if f := floor(); f != 0 {
		t.Fatalf("empty store: floor %d", f)
	}
	var logs []*raft.Log
	for i := uint64(1); i <= 10; i++ {
		logs = append(logs, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte("x")})
	}
	if err := store.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	if f := floor(); f != 10 {
		t.Fatalf("log to 10: floor %d", f)
	}
	if err := store.SetUint64(appliedKey, 7); err != nil {
		t.Fatal(err)
	}
	if f := floor(); f != 7 {
		t.Fatalf("clean stop at 7: floor %d", f)
	}
	if f := floor(); f != 10 {
		t.Fatalf("the clean-stop record was used twice: floor %d", f)
	}
	// A snapshot past the log (installed from a leader, log compacted).
	sink, err := snaps.Create(raft.SnapshotVersionMax, 25, 2, raft.Configuration{}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	sink.Close()
	if f := floor(); f != 25 {
		t.Fatalf("snapshot at 25: floor %d", f)
	}
}

// TestFollowerRestartNeverGoesBack: a follower stopped after serving
// reads, restarted on its folder while the leader goes on writing, never
// serves a read older than what it served before the stop: it answers
// LOADING (or TRYAGAIN) until its engine is back there. Run twice: after a
// clean stop (the applied index recorded) and with that record wiped, as
// after kill -9 (the floor is then the raft log's last index). Before the
// read floor, the restarted follower answered from its old snapshot at
// once: "no such collection" for k.
func TestFollowerRestartNeverGoesBack(t *testing.T) {
	for _, crash := range []bool{false, true} {
		name := "clean"
		if crash {
			name = "crash"
		}
		t.Run(name, func(t *testing.T) { followerRestart(t, crash) })
	}
}

func followerRestart(t *testing.T, crash bool) {
	nodes := startGroup(t, 3)
	leader := waitLeader(t, nodes)
	ctx := context.Background()
	lc := leader.client(t)
	if err := lc.Do(ctx, "MEM.CREATE", "old", "DIM", 2).Err(); err != nil {
		t.Fatal(err)
	}
	var follower *testNode
	for _, tn := range nodes {
		if tn != leader {
			follower = tn
		}
	}
	waitCaughtUp(t, leader, nodes)
	// The follower's snapshot holds only "old": everything after it is
	// replayed from its log when it restarts.
	if err := follower.node.Raft().Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	if err := lc.Do(ctx, "MEM.CREATE", "k", "DIM", 2).Err(); err != nil {
		t.Fatal(err)
	}
	fill(t, leader, 1, 200)
	waitCaughtUp(t, leader, nodes)
	fc := follower.client(t)
	before, err := fc.Do(ctx, "MEM.COUNT", "k").Int()
	if err != nil || before != 200 {
		t.Fatalf("follower read before the restart: %d %v", before, err)
	}

	appliedBefore := follower.node.AppliedIndex()
	follower.stop(t)
	// Close recorded what the follower had applied; a crash would not.
	store, err := raftboltdb.NewBoltStore(filepath.Join(follower.dir, "raft", "raft.db"))
	if err != nil {
		t.Fatal(err)
	}
	recorded, err := store.GetUint64(appliedKey)
	if err != nil || recorded < appliedBefore {
		t.Fatalf("Close recorded applied index %d (%v); it had applied %d before", recorded, err, appliedBefore)
	}
	if crash {
		if err := store.SetUint64(appliedKey, 0); err != nil {
			t.Fatal(err)
		}
	}
	store.Close()
	fill(t, leader, 1000, 100) // the follower misses these
	follower.relisten(t)
	follower.start(t, nil)
	restarted := time.Now()
	// Clean: the floor is the applied index Close recorded. Crash: the
	// log's last index, which is at least that.
	if f := follower.node.floor.Load(); f < recorded || (!crash && f != recorded) {
		t.Fatalf("read floor %d; the follower had applied %d (crash %v)", f, recorded, crash)
	}
	fc = follower.client(t)

	// Read as fast as possible from the moment it serves; keep writing.
	done := make(chan error, 1)
	go func() { // no t.Fatal off the test's goroutine
		pipe := lc.Pipeline()
		for i := 2000; i < 2100; i++ {
			pipe.Do(ctx, "MEM.ADD", "k", "VALUES", 2, 1, float64(i), "ID", i)
		}
		_, err := pipe.Exec(ctx)
		done <- err
	}()
	refused, served, last := 0, 0, before
	deadline := time.Now().Add(30 * time.Second)
	for served < 100 {
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s: %d reads served, %d refused", served, refused)
		}
		n, err := fc.Do(ctx, "MEM.COUNT", "k").Int()
		if err != nil {
			if !strings.HasPrefix(err.Error(), "LOADING") && !strings.HasPrefix(err.Error(), "TRYAGAIN") {
				t.Fatalf("read %d after the restart: %v", served+refused+1, err)
			}
			if served > 0 {
				t.Fatalf("refused (%v) after serving %d reads", err, served)
			}
			if refused == 0 || refused%500 == 0 {
				t.Logf("refusal %d at %v: %v", refused, time.Since(restarted).Round(time.Millisecond), err)
			}
			refused++
			continue
		}
		if n < last {
			t.Fatalf("read %d after the restart saw %d memories, older than the %d seen before", served+refused+1, n, last)
		}
		last = n
		served++
	}
	if err := <-done; err != nil {
		t.Fatalf("writes during the restart: %v", err)
	}
	t.Logf("served from %v", time.Since(restarted))
	t.Logf("after the restart: %d reads refused, then %d served (counts %d..%d)", refused, served, before, last)
	sameState(t, leader, nodes)
}

// TestIsolatedFollowerRefusesReads: a follower cut off from its leader
// stops serving reads (TRYAGAIN saying why) within its stale-read bound,
// and serves them again once healed.
func TestIsolatedFollowerRefusesReads(t *testing.T) {
	fn := newFaultNet()
	nodes := startGroupWith(t, 3, fn.transport)
	leader := waitLeader(t, nodes)
	ctx := context.Background()
	if err := leader.client(t).Do(ctx, "MEM.CREATE", "k", "DIM", 2).Err(); err != nil {
		t.Fatal(err)
	}
	fill(t, leader, 1, 10)
	waitCaughtUp(t, leader, nodes)
	var follower *testNode
	var all []string
	for _, tn := range nodes {
		all = append(all, tn.raftAddr)
		if tn != leader {
			follower = tn
		}
	}
	fc := follower.client(t)
	read := func() error { return fc.Do(ctx, "MEM.COUNT", "k").Err() }
	if err := read(); err != nil {
		t.Fatalf("follower read before the cut: %v", err)
	}
	bound := follower.node.staleReadBound()
	cut := time.Now()
	fn.isolate(follower.raftAddr, all)
	var err error
	for deadline := time.Now().Add(bound + 20*time.Second); ; time.Sleep(10 * time.Millisecond) {
		if err = read(); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("an isolated follower still serves reads %v after the cut (bound %v)", time.Since(cut), bound)
		}
	}
	if !strings.HasPrefix(err.Error(), "TRYAGAIN") || !strings.Contains(err.Error(), "stale") {
		t.Fatalf("isolated follower's refusal: %v", err)
	}
	t.Logf("refused %v after the cut (bound %v): %v", time.Since(cut).Round(time.Millisecond), bound, err)
	fn.heal()
	for deadline := time.Now().Add(30 * time.Second); read() != nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("healed follower still refuses: %v", read())
		}
	}
}

// TestStaleReadBound: a follower whose leader has been silent for longer
// than StaleReadBound, while it still believes in that leader, refuses
// reads, saying for how long it has heard nothing. (Raft's heartbeat
// timeout is 4 s here, ten times the bound, so the follower does not stop
// believing in its leader first and refuse for that reason.)
func TestStaleReadBound(t *testing.T) {
	fn := newFaultNet()
	nodes := startGroupOpts(t, 3, groupOpts{trans: fn.transport, tweak: func(c *Config) {
		c.Raft.HeartbeatTimeout = 4 * time.Second
		c.Raft.ElectionTimeout = 4 * time.Second
		c.Raft.LeaderLeaseTimeout = 2 * time.Second
		c.StaleReadBound = 400 * time.Millisecond
	}})
	leader := waitLeader(t, nodes)
	var follower *testNode
	var all []string
	for _, tn := range nodes {
		all = append(all, tn.raftAddr)
		if tn != leader {
			follower = tn
		}
	}
	ctx := context.Background()
	if err := leader.client(t).Do(ctx, "MEM.CREATE", "k", "DIM", 2).Err(); err != nil {
		t.Fatal(err)
	}
	waitCaughtUp(t, leader, nodes)
	fc := follower.client(t)
	read := func() error { return fc.Do(ctx, "MEM.COUNT", "k").Err() }
	deadline := time.Now().Add(20 * time.Second)
	for err := read(); err != nil; err = read() {
		if time.Now().After(deadline) {
			t.Fatalf("follower in contact refuses: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cut := time.Now()
	fn.isolate(follower.raftAddr, all)
	var err error
	for err == nil {
		if time.Now().After(deadline) {
			t.Fatal("isolated follower still serves")
		}
		time.Sleep(10 * time.Millisecond)
		err = read()
	}
	if !strings.HasPrefix(err.Error(), "TRYAGAIN") || !strings.Contains(err.Error(), "has not heard from") {
		t.Fatalf("refusal: %v", err)
	}
	// Not before the bound: the follower last heard from its leader at
	// least 400 ms before it refused (no contact since the cut).
	if silent := time.Since(follower.node.Raft().LastContact()); silent < 400*time.Millisecond {
		t.Fatalf("refused after only %v without contact, within the 400 ms bound: %v", silent, err)
	}
	t.Logf("refused %v after the cut: %v", time.Since(cut).Round(time.Millisecond), err)
	fn.heal()
}

// TestFloorLiveness: the floor is always reachable. A tail truncation
// (entries a new leader's log replaced: never committed) lowers it, a
// compaction does not; only no-ops and barriers between the applied index
// and the floor count as reached.
func TestFloorLiveness(t *testing.T) {
	store, err := raftboltdb.NewBoltStore(filepath.Join(t.TempDir(), "raft.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	n := &Node{store: store}
	n.floor.Store(10)
	var logs []*raft.Log
	for i := uint64(1); i <= 10; i++ {
		typ := raft.LogCommand
		switch i {
		case 6:
			typ = raft.LogNoop
		case 7:
			typ = raft.LogBarrier
		}
		logs = append(logs, &raft.Log{Index: i, Term: 1, Type: typ})
	}
	if err := store.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	if !n.onlyNoops(6, 7) || n.onlyNoops(5, 7) || n.onlyNoops(6, 8) || n.onlyNoops(11, 11) {
		t.Fatal("onlyNoops misjudges entries 5..8 or a missing one")
	}
	ls := readGateLogStore{store, n}
	if err := ls.DeleteRange(1, 3); err != nil { // compaction: from the first index
		t.Fatal(err)
	}
	if f := n.floor.Load(); f != 10 {
		t.Fatalf("a compaction moved the floor to %d", f)
	}
	if err := ls.DeleteRange(9, 10); err != nil { // a conflicting suffix
		t.Fatal(err)
	}
	if f := n.floor.Load(); f != 8 {
		t.Fatalf("after entries 9..10 were truncated the floor is %d, want 8", f)
	}
	n.lowerFloor(9) // never raised
	if f := n.floor.Load(); f != 8 {
		t.Fatalf("lowerFloor raised the floor to %d", f)
	}
}
