package replica

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// TestCloseRightAfterLeadership: a node stopped just after it became
// leader closes. Its watchLeadership goroutine runs a barrier on becoming
// leader, and with BatchApplyCh a barrier still in raft's buffered apply
// queue when raft shuts down is never answered: Close, which waits for
// that goroutine, waited for good (found by the flake hunt in
// TestRaftAddRefusesBadNodeID's cleanup; before the fix this test hung
// in its 4th round).
func TestCloseRightAfterLeadership(t *testing.T) {
	rounds := 20
	if testing.Short() {
		rounds = 5
	}
	// A group of one elects itself after a heartbeat timeout: short ones
	// keep the rounds quick.
	fast := func(c *Config) {
		c.Raft.HeartbeatTimeout = 50 * time.Millisecond
		c.Raft.ElectionTimeout = 50 * time.Millisecond
		c.Raft.LeaderLeaseTimeout = 50 * time.Millisecond
	}
	for i := 0; i < rounds; i++ {
		nodes := startGroupOpts(t, 1, groupOpts{trans: func() (*raft.NetworkTransport, error) { return ListenTCP("127.0.0.1:0", nil) }, tweak: fast})
		tn := nodes[0]
		for deadline := time.Now().Add(20 * time.Second); !tn.node.IsLeader(); time.Sleep(100 * time.Microsecond) {
			if time.Now().After(deadline) {
				t.Fatal("a group of one elected no leader")
			}
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			tn.stop(t)
		}()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			nodes[0] = &testNode{} // the cleanup must not stop it again while Close hangs
			t.Fatalf("round %d: Close did not return within 30 s of the node becoming leader", i)
		}
	}
}
