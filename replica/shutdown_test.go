package replica

import (
	"context"
	"net"
	"strings"
	"sync"
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

// TestCloseWithSilentPeerAddresses: a node whose peers' raft addresses
// accept connections and never answer (the peers stopped and another
// process took their ports, or they hang) still closes within its
// shutdown timeout, on the transport the test groups give their nodes
// (startGroup). raft's RPCs to such an address wait for their 10 s
// deadline, and Shutdown waits for the goroutines making them; on a
// bare raft TCP transport (ListenTCP, the groups' transport until
// TestTransferLeadership's unexplained shutdown timeout) nothing ends
// them sooner, so Close failed with ErrShutdownTimeout.
func TestCloseWithSilentPeerAddresses(t *testing.T) {
	// 8 s: under the RPCs' 10 s deadline, over the 5 s a dial may spend
	// in its handshake with the secret (handshakeTimeout), which Close
	// does not cut short (the connection is not yet the stream's).
	nodes := startGroupOpts(t, 3, groupOpts{tweak: func(c *Config) { c.ShutdownTimeout = 8 * time.Second }})
	waitLeader(t, nodes)
	survivor := nodes[0]
	heard := make(chan struct{}, 1)
	for _, tn := range nodes[1:] {
		tn.stop(t)
		silentListener(t, tn.raftAddr, heard)
	}
	// An RPC of the survivor (a heartbeat, an append or a vote) has
	// reached a silent address and waits for its answer.
	select {
	case <-heard:
	case <-time.After(30 * time.Second):
		t.Fatal("the survivor sent nothing to its peers' addresses")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	survivor.srv.Shutdown(ctx)
	<-survivor.serveErr
	node := survivor.node
	survivor.node = nil // closed here; the cleanup skips it
	start := time.Now()
	if err := node.Close(); err != nil {
		t.Fatalf("Close after %v: %v", time.Since(start).Round(time.Millisecond), err)
	}
	t.Logf("closed in %v with silent peers", time.Since(start).Round(time.Millisecond))
}

// silentListener listens on addr (a stopped node's port) and reads what
// its connections bring, answering nothing; heard gets a token when a
// read returns data. It stops when the test ends.
func silentListener(t *testing.T, addr string, heard chan<- struct{}) {
	t.Helper()
	var ln net.Listener
	var err error
	for range 50 {
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex // guards conns
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go func() {
				buf := make([]byte, 4096)
				for {
					if _, err := c.Read(buf); err != nil {
						return
					}
					select {
					case heard <- struct{}{}:
					default:
					}
				}
			}()
		}
	}()
}
