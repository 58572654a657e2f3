package replica

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestCloseWithPausedPeer: a leader whose follower stopped reading (its
// writes block with no deadline, as to a SIGSTOPped process whose socket
// buffers are full) still shuts down promptly: Close closes the
// transport's connections, so raft's replication goroutines return.
// Before that, Close waited for the blocked goroutine for ever.
func TestCloseWithPausedPeer(t *testing.T) {
	fn := newFaultNet()
	nodes := startGroupOpts(t, 3, groupOpts{stream: fn.layer, tweak: func(c *Config) { c.ShutdownTimeout = 20 * time.Second }})
	leader := waitLeader(t, nodes)
	var paused *testNode
	for _, tn := range nodes {
		if tn != leader {
			paused = tn
		}
	}
	t.Cleanup(func() { fn.resume(paused.raftAddr) }) // before the nodes stop
	ctx := context.Background()
	lc := leader.client(t)
	if err := lc.Do(ctx, "MEM.CREATE", "k", "DIM", 2).Err(); err != nil {
		t.Fatal(err)
	}
	fn.pause(paused.raftAddr)
	// Writes commit through the other follower; the leader's goroutines
	// sending to the paused one block.
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; fn.blockedWrites() == 0; i++ {
		if time.Now().After(deadline) {
			t.Fatal("no write to the paused follower blocked")
		}
		if err := lc.Do(ctx, "MEM.ADD", "k", "VALUES", 2, 1, float64(i)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	leader.srv.Shutdown(sctx)
	<-leader.serveErr
	start := time.Now()
	done := make(chan error, 1)
	node := leader.node
	leader.node = nil // closed here; the cleanup skips it
	go func() { done <- node.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("Close still blocked after 60 s (%d writes blocked)", fn.blockedWrites())
	}
	t.Logf("leader closed in %v with a paused follower", time.Since(start).Round(time.Millisecond))
	if n := fn.blockedWrites(); n != 0 {
		t.Fatalf("%d writes still blocked after Close", n)
	}
}

// TestTransferLeadership: a leader hands its leadership over; another node
// leads at once (raft's TimeoutNow, not an election timeout: the old
// leader goes on heartbeating until it steps down, so no follower's timer
// fires); the old leader refuses writes with TRYAGAIN at once, and writes
// succeed on the new leader.
func TestTransferLeadership(t *testing.T) {
	nodes := startGroup(t, 3)
	old := waitLeader(t, nodes)
	ctx := context.Background()
	if err := old.client(t).Do(ctx, "MEM.CREATE", "k", "DIM", 2).Err(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := old.node.TransferLeadership(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	id, ok := old.node.Leader()
	if !ok || id == old.id || old.node.IsLeader() {
		t.Fatalf("after the transfer %s says the leader is %q (%v)", old.id, id, ok)
	}
	err := old.client(t).Do(ctx, "MEM.ADD", "k", "VALUES", 2, 1, 1).Err()
	if err == nil || !strings.HasPrefix(err.Error(), "TRYAGAIN") || !strings.Contains(err.Error(), "not applied") {
		t.Fatalf("write on the old leader: %v", err)
	}
	var nl *testNode
	for _, tn := range nodes {
		if tn.id == id {
			nl = tn
		}
	}
	c := nl.client(t)
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := c.Do(ctx, "MEM.ADD", "k", "VALUES", 2, 1, 2).Err()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no write on the new leader %s: %v", id, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("leadership %s -> %s in %v; a write acknowledged %v after the transfer began", old.id, id,
		took.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	// A node that does not lead has nothing to hand over.
	if err := old.node.TransferLeadership(time.Second); err != nil {
		t.Fatalf("transfer from a follower: %v", err)
	}
	sameState(t, nl, nodes)
}
