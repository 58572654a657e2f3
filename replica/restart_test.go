package replica

import (
	"context"
	"testing"
)

// TestWholeGroupRestart: every node stopped and started again on its
// folder (raft state kept, engines rebuilt from each node's snapshot and
// log) comes back with the same state, without bootstrapping again; a
// follower restarted alone catches up with what it missed.
func TestWholeGroupRestart(t *testing.T) {
	nodes := startGroup(t, 3)
	leader := waitLeader(t, nodes)
	ctx := context.Background()
	if err := leader.client(t).Do(ctx, "MEM.CREATE", "k", "DIM", 2).Err(); err != nil {
		t.Fatal(err)
	}
	fill(t, leader, 1, 100)
	if err := leader.node.Raft().Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	fill(t, leader, 200, 30) // after the snapshot: replayed from the log

	var follower *testNode
	for _, tn := range nodes {
		if tn != leader {
			follower = tn
		}
	}
	follower.stop(t)
	fill(t, leader, 300, 20)
	follower.relisten(t)
	follower.start(t, nil) // raft state exists: Peers would be ignored anyway
	want := sameState(t, leader, nodes)

	for _, tn := range nodes {
		tn.stop(t)
	}
	for _, tn := range nodes {
		tn.relisten(t)
	}
	var peers []Peer
	for _, tn := range nodes {
		peers = append(peers, Peer{ID: tn.id, RaftAddr: tn.raftAddr})
	}
	for _, tn := range nodes {
		tn.start(t, peers)
	}
	leader = waitLeader(t, nodes)
	if got := sameState(t, leader, nodes); got != want {
		t.Fatalf("state after a restart of the whole group differs:\n%s\nwant:\n%s", clip(got), clip(want))
	}
	fill(t, leader, 400, 5)
	sameState(t, leader, nodes)
}
