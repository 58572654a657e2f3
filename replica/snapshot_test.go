package replica

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fill adds n memories (ids from first) with payloads and rewards some.
func fill(t *testing.T, tn *testNode, first, n int) {
	t.Helper()
	ctx := context.Background()
	rdb := tn.client(t)
	pipe := rdb.Pipeline()
	for i := first; i < first+n; i++ {
		pipe.Do(ctx, "MEM.ADD", "k", "VALUES", 2, 1, float64(i), "ID", i, "PAYLOAD", strings.Repeat("x", i%50))
		if i%4 == 0 {
			pipe.Do(ctx, "MEM.REWARD", "k", 0.5, i)
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestCatchUpFromSnapshot: a replica restarted from an empty folder,
// after the leader has snapshotted and compacted its log past what the
// replica had, catches up by installing the snapshot, and ends in the
// leader's state.
func TestCatchUpFromSnapshot(t *testing.T) {
	nodes := startGroup(t, 3)
	leader := waitLeader(t, nodes)
	ctx := context.Background()
	if err := leader.client(t).Do(ctx, "MEM.CREATE", "k", "DIM", 2).Err(); err != nil {
		t.Fatal(err)
	}
	fill(t, leader, 1, 200)
	var lag *testNode
	for _, tn := range nodes {
		if tn != leader {
			lag = tn
			break
		}
	}
	lag.stop(t)
	fill(t, leader, 1000, 200)
	if err := leader.node.Raft().Snapshot().Error(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	fill(t, leader, 2000, 50)
	// RAFT.SNAPSHOT KEEP 0: a snapshot, and the log compacted behind it.
	rdb := leader.client(t)
	for _, bad := range [][]any{{"RAFT.SNAPSHOT", "KEEP"}, {"RAFT.SNAPSHOT", "KEEP", -1}, {"RAFT.SNAPSHOT", "HOLD", 1}} {
		if err := rdb.Do(ctx, bad...).Err(); err == nil || !strings.Contains(err.Error(), "syntax error") {
			t.Fatalf("%v: %v", bad, err)
		}
	}
	// (Pipelined writes share entries: the index counts entries, not writes.)
	last := leader.node.AppliedIndex()
	if idx, err := rdb.Do(ctx, "RAFT.SNAPSHOT", "KEEP", 0).Int64(); err != nil || uint64(idx) < last {
		t.Fatalf("RAFT.SNAPSHOT KEEP 0 = %d, %v; want at least %d", idx, err, last)
	}
	if first, err := leader.node.store.FirstIndex(); err != nil || (first != 0 && first <= last) { // 0: empty
		t.Fatalf("log not compacted: first index %d, %v", first, err)
	}
	fill(t, leader, 3000, 10)

	state := restartEmpty(t, lag, leader, nodes)
	if n := strings.Count(state, "\n") - 1; n != 460 {
		t.Fatalf("%d memories, want 460", n)
	}
	// It keeps applying after the install.
	fill(t, leader, 4000, 5)
	sameState(t, leader, nodes)
}

// restartEmpty starts the stopped node lag again from an empty folder,
// waits until every node has the leader's state (returned) and checks that
// lag got there by installing a snapshot, not by replaying the log.
func restartEmpty(t *testing.T, lag, leader *testNode, nodes []*testNode) string {
	t.Helper()
	if err := os.RemoveAll(lag.dir); err != nil {
		t.Fatal(err)
	}
	lag.relisten(t)
	var peers []Peer
	for _, tn := range nodes {
		peers = append(peers, Peer{ID: tn.id, RaftAddr: tn.raftAddr})
	}
	lag.start(t, peers)
	state := sameState(t, leader, nodes)
	if got := lag.node.Raft().Stats()["last_snapshot_index"]; got == "0" || got == "" {
		t.Fatalf("the empty replica caught up without a snapshot (last_snapshot_index %q)", got)
	}
	return state
}

// TestCorruptSnapshotRefused: a snapshot stream with any byte changed,
// cut short or extended is refused by Restore, which changes nothing; the
// intact stream restores the same state on another node.
func TestCorruptSnapshotRefused(t *testing.T) {
	nodes := startGroup(t, 3)
	leader := waitLeader(t, nodes)
	ctx := context.Background()
	rdb := leader.client(t)
	if err := rdb.Do(ctx, "MEM.CREATE", "k", "DIM", 2).Err(); err != nil {
		t.Fatal(err)
	}
	fill(t, leader, 1, 100)
	if err := rdb.Do(ctx, "MEM.SNAPSHOT", "k", "s1").Err(); err != nil {
		t.Fatal(err)
	}
	// The stream as raft stored it (fsm.Snapshot, then Persist).
	f := leader.node.Raft().Snapshot()
	if err := f.Error(); err != nil {
		t.Fatal(err)
	}
	_, rc, err := f.Open()
	if err != nil {
		t.Fatal(err)
	}
	var stream bytes.Buffer
	if _, err := io.Copy(&stream, rc); err != nil {
		t.Fatal(err)
	}
	rc.Close()
	good := stream.Bytes()

	var other *testNode
	for _, tn := range nodes {
		if tn != leader {
			other = tn
			break
		}
	}
	waitCaughtUp(t, leader, nodes)
	want := digest(t, other.node.DB())
	gens, _ := os.ReadDir(filepath.Join(other.dir, "fsm"))

	bad := map[string][]byte{
		"cut":        good[:len(good)/2],
		"empty":      nil,
		"extended":   append(bytes.Clone(good), 0),
		"no trailer": good[:len(good)-16],
	}
	for _, at := range []int{0, 9, 14, len(good) / 3, len(good) / 2, len(good) - 20, len(good) - 1} {
		b := bytes.Clone(good)
		b[at] ^= 0x01
		bad[fmt.Sprintf("flip@%d", at)] = b
	}
	for name, b := range bad {
		err := (fsm{other.node}).Restore(io.NopCloser(bytes.NewReader(b)))
		if !errors.Is(err, ErrBadSnapshot) {
			t.Fatalf("%s: Restore = %v, want ErrBadSnapshot", name, err)
		}
		if got := digest(t, other.node.DB()); got != want {
			t.Fatalf("%s: a refused snapshot changed the state", name)
		}
		if now, _ := os.ReadDir(filepath.Join(other.dir, "fsm")); len(now) != len(gens) {
			t.Fatalf("%s: a refused snapshot left a folder behind: %d, was %d", name, len(now), len(gens))
		}
	}
	// A name escaping the folder is refused too.
	if validSnapName("../x") || validSnapName("/etc/x") || validSnapName("a//b") || validSnapName("LOCK") || !validSnapName("collections/1/vectors.f32") {
		t.Fatal("validSnapName")
	}
	// The intact stream installs: the state is the leader's, snapshot
	// catalog included.
	if err := (fsm{other.node}).Restore(io.NopCloser(bytes.NewReader(good))); err != nil {
		t.Fatal(err)
	}
	if got := digest(t, other.node.DB()); got != want {
		t.Fatalf("restored state differs:\n%s\nwant:\n%s", clip(got), clip(want))
	}
	c, err := other.node.DB().Collection("k")
	if err != nil {
		t.Fatal(err)
	}
	if snaps, err := c.Snapshots(); err != nil || len(snaps) != 1 {
		t.Fatalf("snapshots after restore: %v %v", snaps, err)
	}
}
