package replica

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/memrl/memrl/cluster"
	"github.com/memrl/memrl/server"
)

// startClusteredGroup starts a 3-node group as shard 0 of a 2-shard
// cluster whose nodes file gives placeholder client addresses (the test
// talks to the nodes directly): n1..n3 in shard 0, m1 in shard 1, which
// every node takes for shard 1's leader.
func startClusteredGroup(t *testing.T) []*testNode {
	t.Helper()
	base := t.TempDir()
	nodesPath := filepath.Join(base, cluster.NodesFile)
	var nodes []cluster.Node
	for i := 1; i <= 3; i++ {
		nodes = append(nodes, cluster.Node{ID: fmt.Sprintf("n%d", i), Addr: fmt.Sprintf("127.0.0.1:%d", 100+i), Shard: 0})
	}
	nodes = append(nodes, cluster.Node{ID: "m1", Addr: "127.0.0.1:201", Shard: 1})
	if err := cluster.WriteNodes(nodesPath, nodes); err != nil {
		t.Fatal(err)
	}
	clustered := func(tn *testNode) {
		st, err := cluster.NewState(cluster.Config{NodesPath: nodesPath, Self: tn.id, Leader: tn.node.Leader})
		if err != nil {
			t.Fatal(err)
		}
		st.SetLeaderForTest(1, "m1")
		tn.srv.SetRouter(server.NewClusterRouter(server.ClusterConfig{State: st, Collections: tn.node.DB().List, Slots: tn.slots}))
	}
	group := make([]*testNode, 3)
	var peers []Peer
	for i := range group {
		tr, err := ListenTCP("127.0.0.1:0", nil)
		if err != nil {
			t.Fatal(err)
		}
		group[i] = &testNode{id: fmt.Sprintf("n%d", i+1), dir: filepath.Join(base, fmt.Sprintf("n%d", i+1)), trans: tr,
			raftAddr: string(tr.LocalAddr()), clustered: clustered}
		peers = append(peers, Peer{ID: group[i].id, RaftAddr: group[i].raftAddr})
	}
	for _, tn := range group {
		tn.start(t, peers)
	}
	t.Cleanup(func() {
		for _, tn := range group {
			tn.stop(t)
		}
	})
	return group
}

// sameSlotStates waits until every live node's applied table is want.
func sameSlotStates(t *testing.T, leader *testNode, nodes []*testNode, want string) {
	t.Helper()
	waitCaughtUp(t, leader, nodes)
	for _, tn := range nodes {
		if tn.node == nil {
			continue
		}
		if got := tn.slots.String(); got != want {
			t.Fatalf("%s's slot states %q, want %q", tn.id, got, want)
		}
	}
}

// TestSetSlotReplicated: CLUSTER SETSLOT is applied by every replica of
// the shard, through its raft log; the states survive a failover, a
// follower catching up through an installed snapshot, and a restart of
// the whole group from snapshots and logs; the leader routes by them.
func TestSetSlotReplicated(t *testing.T) {
	nodes := startClusteredGroup(t)
	leader := waitLeader(t, nodes)
	ctx := context.Background()
	do := func(tn *testNode, args ...any) {
		t.Helper()
		if err := tn.client(t).Do(ctx, args...).Err(); err != nil {
			t.Fatalf("%s %v: %v", tn.id, args, err)
		}
	}
	// Slots 0..8191 are shard 0's, 8192.. shard 1's.
	var in10, in11 string
	for i := 0; in10 == "" || in11 == ""; i++ {
		name := fmt.Sprintf("c%d", i)
		switch cluster.HashSlot([]byte(name)) {
		case 10:
			in10 = name
		case 11:
			in11 = name
		}
	}
	do(leader, "MEM.CREATE", in11, "DIM", 2)
	do(leader, "CLUSTER", "SETSLOT", 10, "MIGRATING", 1)
	do(leader, "CLUSTER", "SETSLOT", 9000, "IMPORTING", 1)
	do(leader, "CLUSTER", "SETSLOT", 11, "NODE", 1)
	sameSlotStates(t, leader, nodes, "10:migrating:1 11:node:1 9000:importing:1")

	// Writes routed before a SETSLOT but committed after it (proposed
	// here straight to raft, past the router) are refused as they apply,
	// by every replica alike, and change nothing.
	propose := func(cmd ...string) string {
		t.Helper()
		e := Entry{At: time.Now().UnixNano()}
		for _, a := range cmd {
			e.Cmd = append(e.Cmd, []byte(a))
		}
		f := leader.node.Raft().Apply(EncodeEntry(e), 10*time.Second)
		if err := f.Error(); err != nil {
			t.Fatal(err)
		}
		return string(f.Response().([]byte))
	}
	if r := propose("MEM.CREATE", in10, "DIM", "2"); r != "-ASK 10 127.0.0.1:201\r\n" {
		t.Fatalf("a create applied in a migrating slot: %q", r)
	}
	if r := propose("MEM.ADD", in11, "VALUES", "2", "1", "0"); r != "-MOVED 11 127.0.0.1:201\r\n" {
		t.Fatalf("an add applied in a slot given away: %q", r)
	}
	waitCaughtUp(t, leader, nodes)
	for _, tn := range nodes {
		if _, err := tn.node.DB().Collection(in10); err == nil {
			t.Fatalf("%s applied the refused create", tn.id)
		}
		c, err := tn.node.DB().Collection(in11)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := c.Count(); err != nil || n != 0 {
			t.Fatalf("%s: %s holds %d memories after the refused add (%v)", tn.id, in11, n, err)
		}
	}

	// The leader routes by them: a collection of slot 10 it lacks is
	// asked of shard 1; slot 11 is shard 1's now.
	rc := leader.client(t)
	if err := rc.Do(ctx, "MEM.INFO", in10).Err(); err == nil || err.Error() != "ASK 10 127.0.0.1:201" {
		t.Fatalf("slot 10, a collection the leader lacks: %v", err)
	}
	if err := rc.Do(ctx, "MEM.INFO", in11).Err(); err == nil || err.Error() != "MOVED 11 127.0.0.1:201" {
		t.Fatalf("slot 11 after NODE: %v", err)
	}

	// A follower misses states and falls behind the leader's compacted
	// log: it catches up through a snapshot, which carries the table.
	var lagger *testNode
	for _, tn := range nodes {
		if tn != leader {
			lagger = tn
		}
	}
	lagger.stop(t)
	do(leader, "CLUSTER", "SETSLOT", 12, "MIGRATING", 1)
	do(leader, "MEM.CREATE", "k", "DIM", 2)
	fill(t, leader, 1, 40)
	do(leader, "RAFT.SNAPSHOT", "KEEP", 0)
	lagger.relisten(t)
	lagger.start(t, nil)
	const want2 = "10:migrating:1 11:node:1 12:migrating:1 9000:importing:1"
	sameSlotStates(t, leader, nodes, want2)
	if lagger.node.Raft().Stats()["last_snapshot_index"] == "0" {
		t.Fatalf("%s caught up without a snapshot; the test did not test the shipped table", lagger.id)
	}

	// Failover: the new leader has the states and takes more. (The
	// restarted lagger may have started an election: stop whichever
	// node leads now.)
	leader = waitLeader(t, nodes)
	leader.stop(t)
	old := leader
	leader = waitLeader(t, nodes)
	do(leader, "CLUSTER", "SETSLOT", 10, "STABLE")
	const want3 = "11:node:1 12:migrating:1 9000:importing:1"
	sameSlotStates(t, leader, nodes, want3)
	old.relisten(t)
	old.start(t, nil)
	sameSlotStates(t, leader, nodes, want3)

	// Every node snapshots, then one more state goes to the log only;
	// a restart of the whole group rebuilds both.
	leader = waitLeader(t, nodes) // the restarted old leader may have started an election
	for _, tn := range nodes {
		if err := tn.node.Raft().Snapshot().Error(); err != nil && err != raft.ErrNothingNewToSnapshot {
			t.Fatal(err)
		}
	}
	do(leader, "CLUSTER", "SETSLOT", 9001, "IMPORTING", 1)
	const want4 = "11:node:1 12:migrating:1 9000:importing:1 9001:importing:1"
	sameSlotStates(t, leader, nodes, want4)
	for _, tn := range nodes {
		tn.stop(t)
	}
	for _, tn := range nodes {
		tn.relisten(t)
	}
	for _, tn := range nodes {
		tn.start(t, nil)
	}
	leader = waitLeader(t, nodes)
	deadline := time.Now().Add(20 * time.Second)
	for leader.node.AppliedIndex() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	sameSlotStates(t, leader, nodes, want4)
}
