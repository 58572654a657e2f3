package replica

import (
	"errors"
	"sync"

	"github.com/hashicorp/raft"
)

// Heartbeats at shutdown. hashicorp/raft's heartbeat fast path does not
// run on raft's main loop: raft registers (*Raft).processHeartbeat with
// the transport (SetHeartbeatHandler), and NetworkTransport calls it on
// the goroutine that read the heartbeat from its connection. The handler
// checks raft's shutdown channel once, at its start; a heartbeat that
// passed that check can still be running after raft's Shutdown future
// has returned, because Shutdown waits only for raft's own goroutines.
// A heartbeat of a later term then persists the term (setCurrentTerm),
// and if Close has meanwhile closed the raft stores, raft panics: "failed
// to save current term: database not open". That can happen at any
// shutdown of a follower while its leader sends heartbeats.
//
// So raft gets the node's transport through a guardedTransport, which
// registers raft's handler wrapped in a heartbeatGuard: each call holds
// the guard's read lock while it runs, and Close, once raft has stopped,
// takes the write lock (waiting for the heartbeats under way) and marks
// the guard closed before it closes the stores. A heartbeat arriving
// after that is answered with errHeartbeatClosed without reaching raft.
//
// Every other path of raft that touches the stores runs on one of raft's
// own goroutines, which Shutdown waits for: the main loop handles every
// other RPC from the transport's consumer channel, InstallSnapshot's
// stream included (its reads end when Close shuts the connections), and
// replication, heartbeats sent, the FSM and snapshots run on goroutines
// started by raft.

// errHeartbeatClosed answers a heartbeat that arrives after Close has
// stopped raft.
var errHeartbeatClosed = errors.New("replica: node shut down")

// heartbeatGuard keeps raft's heartbeat handler from running once the
// node's stores close.
type heartbeatGuard struct {
	// mu is read-held by every heartbeat handler for its whole run and
	// write-held by close; it guards closed.
	mu     sync.RWMutex
	closed bool
	// closing is closed when close starts waiting for the handlers under
	// way (tests order on it).
	closing     chan struct{}
	closingOnce sync.Once
}

func newHeartbeatGuard() *heartbeatGuard {
	return &heartbeatGuard{closing: make(chan struct{})}
}

// wrap returns cb guarded: it runs only while the guard is open, and
// close waits for it.
func (g *heartbeatGuard) wrap(cb func(raft.RPC)) func(raft.RPC) {
	if cb == nil {
		return nil
	}
	return func(rpc raft.RPC) {
		g.mu.RLock()
		if g.closed {
			g.mu.RUnlock()
			// Respond outside the lock: close must never wait on a
			// response channel.
			rpc.Respond(nil, errHeartbeatClosed)
			return
		}
		defer g.mu.RUnlock()
		cb(rpc)
	}
}

// close waits for the heartbeat handlers under way and keeps any other
// from reaching raft. REQUIRES: raft has stopped (its Shutdown future
// returned), else a heartbeat refused here could have been raft's to
// answer. Idempotent.
func (g *heartbeatGuard) close() {
	g.closingOnce.Do(func() { close(g.closing) })
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
}

// guardedTransport is the transport raft is given: the node's transport
// with its heartbeat handler guarded. It also closes the transport when
// raft's Shutdown future asks (raft.WithClose), as raft would have
// without the wrapper.
type guardedTransport struct {
	raft.Transport
	g *heartbeatGuard
	// pipes are the pipelines handed to raft (transport_pipeline.go).
	pipes *pipelineSet
}

// AppendEntriesPipeline returns a pipeline to target that pipes remember
// (raft.Transport).
func (t *guardedTransport) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	p, err := t.Transport.AppendEntriesPipeline(id, target)
	if err != nil {
		return nil, err
	}
	return t.pipes.track(p)
}

// SetHeartbeatHandler registers cb, guarded (raft.Transport).
func (t *guardedTransport) SetHeartbeatHandler(cb func(raft.RPC)) {
	t.Transport.SetHeartbeatHandler(t.g.wrap(cb))
}

// Close closes the wrapped transport if it can be closed (raft.WithClose).
func (t *guardedTransport) Close() error {
	if c, ok := t.Transport.(raft.WithClose); ok {
		return c.Close()
	}
	return nil
}

// guardedPreVoteTransport is a guardedTransport over a transport that
// supports pre-vote: raft checks for raft.WithPreVote on the transport it
// is given, and must see the same as without the wrapper.
type guardedPreVoteTransport struct {
	*guardedTransport
	pv raft.WithPreVote
}

// RequestPreVote forwards to the wrapped transport (raft.WithPreVote).
func (t guardedPreVoteTransport) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	return t.pv.RequestPreVote(id, target, args, resp)
}

// guardTransport returns trans with its heartbeat handler guarded by g and
// the pipelines it makes remembered by pipes.
func guardTransport(trans raft.Transport, g *heartbeatGuard, pipes *pipelineSet) raft.Transport {
	gt := &guardedTransport{Transport: trans, g: g, pipes: pipes}
	if pv, ok := trans.(raft.WithPreVote); ok {
		return guardedPreVoteTransport{gt, pv}
	}
	return gt
}
