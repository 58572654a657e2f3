package replica

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRaftAddRefusesBadNodeID: RAFT.ADD's node id becomes a member of the
// raft configuration on every replica, for good, and names the node's
// folder and nodes-file line; one that is not a valid node id (1 to 40 of
// a-z, 0-9, '-') gets an ERR and the configuration does not change.
func TestRaftAddRefusesBadNodeID(t *testing.T) {
	nodes := startGroup(t, 3)
	leader := waitLeader(t, nodes)
	ctx := context.Background()
	rdb := leader.client(t)
	before := leader.node.Raft().GetConfiguration()
	if err := before.Error(); err != nil {
		t.Fatal(err)
	}
	for i, id := range []string{"", "UPPER", "has space", "a\tb", "../x", strings.Repeat("a", 41), "n\r\n5"} {
		// Distinct addresses: raft refuses a duplicate address itself.
		err := rdb.Do(ctx, "RAFT.ADD", id, "127.0.0.1:"+strconv.Itoa(7901+i)).Err()
		if err == nil || !strings.HasPrefix(err.Error(), "ERR") {
			t.Errorf("RAFT.ADD %q: %v, want ERR", id, err)
		}
	}
	after := leader.node.Raft().GetConfiguration()
	if err := after.Error(); err != nil {
		t.Fatal(err)
	}
	if len(after.Configuration().Servers) != len(before.Configuration().Servers) {
		t.Fatalf("a refused RAFT.ADD changed the configuration: %v", after.Configuration().Servers)
	}
}

// TestRaftRemoveRefusesNonMember: RAFT.REMOVE of an id that is not in the
// group (a typo) gets an ERR saying so, rather than +OK, which would tell
// the operator a node was removed, and appends no configuration entry.
func TestRaftRemoveRefusesNonMember(t *testing.T) {
	nodes := startGroup(t, 3)
	leader := waitLeader(t, nodes)
	rdb := leader.client(t)
	before := leader.node.Raft().GetConfiguration()
	if err := before.Error(); err != nil {
		t.Fatal(err)
	}
	err := rdb.Do(context.Background(), "RAFT.REMOVE", "n9").Err()
	if err == nil || !strings.HasPrefix(err.Error(), "ERR") || !strings.Contains(err.Error(), "not a member") {
		t.Fatalf("RAFT.REMOVE of a non-member: %v, want ERR ... not a member", err)
	}
	after := leader.node.Raft().GetConfiguration()
	if err := after.Error(); err != nil {
		t.Fatal(err)
	}
	if after.Index() != before.Index() || len(after.Configuration().Servers) != 3 {
		t.Fatalf("a refused RAFT.REMOVE changed the configuration: index %d -> %d, %v", before.Index(), after.Index(), after.Configuration().Servers)
	}
}

// TestRaftAddRefusesAbsentNode: a voter raises the quorum the moment its
// configuration entry is appended, so RAFT.ADD of a node that is not
// running (a typo in its address) took a one-node shard down for good:
// the entry needs two votes, there is one, and the configuration is in
// the log across restarts. RAFT.ADD now first asks the node at its client
// address for its RAFT.STATUS (it must be running, a replica, and be the
// node named) and refuses otherwise, changing nothing.
func TestRaftAddRefusesAbsentNode(t *testing.T) {
	nodes := startGroup(t, 1)
	leader := waitLeader(t, nodes)
	ctx := context.Background()
	rdb := leader.client(t)
	before := leader.node.Raft().GetConfiguration()
	if err := before.Error(); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	absent := ln.Addr().String()
	ln.Close()
	start := time.Now()
	err = rdb.Do(ctx, "RAFT.ADD", "n9", absent, "127.0.0.1:1").Err()
	if err == nil || !strings.HasPrefix(err.Error(), "ERR") {
		t.Fatalf("RAFT.ADD of a node not running: %v, want ERR", err)
	}
	// The node named must be the one at the address: leader's own
	// address under another id is refused too.
	if err := rdb.Do(ctx, "RAFT.ADD", "n9", leader.addr, "127.0.0.1:2").Err(); err == nil || !strings.HasPrefix(err.Error(), "ERR") {
		t.Fatalf("RAFT.ADD n9 at n1's address: %v, want ERR", err)
	}
	after := leader.node.Raft().GetConfiguration()
	if err := after.Error(); err != nil {
		t.Fatal(err)
	}
	if after.Index() != before.Index() {
		t.Fatalf("a refused RAFT.ADD changed the configuration (after %v): %v", time.Since(start), after.Configuration().Servers)
	}
	if err := rdb.Do(ctx, "MEM.CREATE", "k", "DIM", 2).Err(); err != nil {
		t.Fatalf("the shard no longer takes writes: %v", err)
	}
}
