package server

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// queueReplicator is a PipelinedReplicator that applies proposals one at
// a time, in the order proposed, on goroutines of its own (as a raft
// state machine does), each once hold is closed (nil: at once). A command
// whose last argument is "refuse" is not applied: it gets -TRYAGAIN.
type queueReplicator struct {
	s        *Server
	hold     chan struct{}
	proposed *atomic.Int64
	applied  atomic.Int64
	waited   atomic.Int64 // waits returned
	maxAhead atomic.Int64 // most proposals unanswered at once

	mu   sync.Mutex
	last chan struct{} // guarded by mu: closed when the last proposal is done
}

func (r *queueReplicator) Replicate(c *Ctx, cmd [][]byte) ([]byte, error) {
	return r.Propose(c, cmd)()
}

func (r *queueReplicator) Propose(c *Ctx, cmd [][]byte) func() ([]byte, error) {
	ahead := r.proposed.Add(1) - r.waited.Load()
	for m := r.maxAhead.Load(); ahead > m && !r.maxAhead.CompareAndSwap(m, ahead); m = r.maxAhead.Load() {
	}
	done := make(chan struct{})
	r.mu.Lock()
	prev := r.last
	r.last = done
	r.mu.Unlock()
	var reply []byte
	var err error
	go func() {
		defer close(done)
		if prev != nil {
			<-prev
		}
		if r.hold != nil {
			<-r.hold
		}
		if string(cmd[len(cmd)-1]) == "refuse" {
			err = &ReplyError{Code: "TRYAGAIN", Msg: "refused"}
			return
		}
		reply = r.s.Apply(cmd)
		r.applied.Add(1)
	}()
	return func() ([]byte, error) {
		<-done
		r.waited.Add(1)
		return reply, err
	}
}

// TestPipelinedReplicationBehaviourUnchanged runs existing server tests
// with a Replicator that takes a connection's writes without waiting for
// each: replies and data must be as without one.
func TestPipelinedReplicationBehaviourUnchanged(t *testing.T) {
	var proposed atomic.Int64
	runWithReplicator(t, &proposed, func(s *Server) Replicator { return &queueReplicator{s: s, proposed: &proposed} })
}

// waitFor polls cond until it holds or 20 s have passed.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestPipelinedWritesOverlapInOrder: a connection's pipelined writes are
// all proposed before the first is applied; their replies come back in
// order, each its own (an error or a refusal does not touch its
// neighbours); a read in the pipeline waits for the writes before it and
// sees them, and the writes after it are proposed only then.
func TestPipelinedWritesOverlapInOrder(t *testing.T) {
	ts, db := startMem(t)
	var proposed atomic.Int64
	r := &queueReplicator{s: ts.Server, proposed: &proposed, hold: make(chan struct{})}
	ts.SetReplicator(r)
	rdb := ts.client(t)
	ctx := context.Background()
	type result struct {
		cmds []redis.Cmder
	}
	res := make(chan result, 1)
	go func() {
		cmds, _ := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.Do(ctx, "MEM.CREATE", "k", "DIM", 2)
			p.Do(ctx, "MEM.ADD", "k", "VALUES", 2, 1, 0, "ID", 1)
			p.Do(ctx, "MEM.ADD", "k", "VALUES", 3, 1, 2, 3) // wrong dimension
			p.Do(ctx, "MEM.ADD", "k", "VALUES", 2, 1, 1, "ID", 9, "PAYLOAD", "refuse")
			p.Do(ctx, "MEM.ADD", "k", "VALUES", 2, 0, 1, "ID", 2)
			p.Do(ctx, "MEM.REWARD", "k", 1, 2)
			p.Do(ctx, "MEM.COUNT", "k") // a read: after the writes above
			p.Do(ctx, "MEM.ADD", "k", "VALUES", 2, 1, 1, "ID", 3)
			return nil
		})
		res <- result{cmds}
	}()
	waitFor(t, "6 writes proposed", func() bool { return proposed.Load() == 6 })
	if a := r.applied.Load(); a != 0 {
		t.Fatalf("%d writes applied before any was let through", a)
	}
	close(r.hold)
	var got result
	select {
	case got = <-res:
	case <-time.After(30 * time.Second):
		t.Fatal("no replies")
	}
	want := []string{"OK", "1", "ERR", "TRYAGAIN", "2", "", "2", "3"}
	if len(got.cmds) != len(want) {
		t.Fatalf("%d replies, want %d", len(got.cmds), len(want))
	}
	for i, c := range got.cmds {
		v, err := c.(*redis.Cmd).Result()
		switch w := want[i]; {
		case w == "ERR" || w == "TRYAGAIN":
			if err == nil || !strings.HasPrefix(err.Error(), w) {
				t.Errorf("reply %d: %v %v, want an %s error", i, v, err, w)
			}
		case err != nil:
			t.Errorf("reply %d: %v", i, err)
		case w != "" && redisString(v) != w:
			t.Errorf("reply %d: %v, want %s", i, v, w)
		}
	}
	if n := count(t, db, "k"); n != 3 || proposed.Load() != 7 {
		t.Fatalf("%d memories, %d proposed; want 3, 7", n, proposed.Load())
	}
}

// redisString formats a go-redis reply value.
func redisString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	}
	return "?"
}

// TestPipelinedWritesBounded: a connection keeps at most
// maxPendingReplies writes proposed and unanswered; past that it waits
// for the oldest, and every reply still comes, in order.
func TestPipelinedWritesBounded(t *testing.T) {
	defer func(n int) { maxPendingReplies = n }(maxPendingReplies)
	maxPendingReplies = 16 // a pipeline that fits the input buffer reaches it
	ts, db := startMem(t)
	var proposed atomic.Int64
	r := &queueReplicator{s: ts.Server, proposed: &proposed, hold: make(chan struct{})}
	ts.SetReplicator(r)
	rdb := ts.client(t)
	ctx := context.Background()
	n := maxPendingReplies + 50
	res := make(chan []redis.Cmder, 1)
	go func() {
		cmds, _ := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.Do(ctx, "MEM.CREATE", "k", "DIM", 2)
			for i := 1; i < n; i++ {
				p.Do(ctx, "MEM.ADD", "k", "VALUES", 2, 1, 0, "ID", i)
			}
			return nil
		})
		res <- cmds
	}()
	waitFor(t, "the bound reached", func() bool { return proposed.Load() == int64(maxPendingReplies) })
	if a := r.applied.Load(); a != 0 {
		t.Fatalf("%d writes applied before any was let through", a)
	}
	close(r.hold)
	var cmds []redis.Cmder
	select {
	case cmds = <-res:
	case <-time.After(60 * time.Second):
		t.Fatal("no replies")
	}
	for i, c := range cmds[1:] {
		if v, err := c.(*redis.Cmd).Int64(); err != nil || v != int64(i+1) {
			t.Fatalf("reply %d: %d %v", i+1, v, err)
		}
	}
	if c := count(t, db, "k"); c != n-1 {
		t.Fatalf("%d memories, want %d", c, n-1)
	}
	if m := r.maxAhead.Load(); m != int64(maxPendingReplies) {
		t.Fatalf("at most %d writes unanswered at once, want %d", m, maxPendingReplies)
	}
}
