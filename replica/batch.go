package replica

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/memrl/memrl/server"
)

// Group commit through raft.
//
// Each write proposed on the leader (Node.Propose) joins a queue; one
// goroutine per node (batcher.run) takes what has queued, up to
// maxBatchCmds commands and maxBatchBytes bytes, and proposes it as ONE
// raft entry (a Batch; a lone command as an Entry). At most maxInflight
// entries are being committed at a time: while they are, the commands
// arriving meanwhile queue up and go out together as the next entry, so
// that under load one raft append, one fsync on each replica and one
// round trip to the followers serve many commands, and under light load a
// command waits for nothing more than its own commit.
//
// INVARIANT: commands leave the queue in the order they joined it, and
// entries are proposed in the order they were formed, by one goroutine:
// the commands one caller proposes one after another are applied in that
// order (a connection's pipeline keeps its order).
//
// Each command gets its own reply (fsm.ApplyBatch returns one per
// command) or, when the entry fails as a whole, the entry's error: not
// leader (nothing applied, -TRYAGAIN), shutting down (nothing applied),
// or an unknown outcome (leadership lost after the append: the entry may
// yet commit under the next leader), as for a command proposed alone.

const (
	// maxBatchCmds bounds the commands of one entry.
	maxBatchCmds = 512
	// maxBatchBytes bounds an entry's encoded commands (a larger command
	// goes alone): followers read an entry whole.
	maxBatchBytes = 1 << 20
	// maxInflight bounds the entries proposed and not yet applied: as
	// many as clients that commonly write one command at a time, so that
	// none of those waits for another's commit (raft appends the entries
	// queued together with one fsync anyway); under more load, the
	// commands queue while raft.Apply blocks (the leader's fsync) and the
	// window is full, and entries grow.
	maxInflight = 8
)

// batcher is a Node's queue of proposed commands and the goroutine that
// turns it into raft entries.
type batcher struct {
	once   sync.Once
	wake   chan struct{} // cap 1: the queue has commands
	window chan struct{} // cap maxInflight: one token per entry in flight

	// entries and cmds count the entries proposed and the commands in
	// them (BatchStats).
	entries, cmds atomic.Int64

	mu     sync.Mutex
	queue  []*proposal // guarded by mu: commands not yet in an entry, oldest first
	closed bool        // guarded by mu: run has ended; nothing more joins
}

// proposal is one command waiting for its reply.
type proposal struct {
	cmd   [][]byte
	done  chan struct{} // closed once reply or err is set
	reply []byte
	err   error
}

func (p *proposal) wait() ([]byte, error) {
	<-p.done
	return p.reply, p.err
}

// Propose queues cmd for replication and returns at once; wait returns
// the reply of its application on this node (as Replicate does), once the
// entry holding it has been committed and applied. The commands a caller
// proposes one after another are applied in that order. Propose fails
// (through wait) at once on a follower. cmd must not change until wait
// has returned (server.PipelinedReplicator).
func (n *Node) Propose(c *server.Ctx, cmd [][]byte) (wait func() ([]byte, error)) {
	if n.raft.State() != raft.Leader {
		err := n.notLeader()
		return func() ([]byte, error) { return nil, err }
	}
	b := &n.batch
	b.once.Do(func() {
		b.wake = make(chan struct{}, 1)
		b.window = make(chan struct{}, maxInflight)
		go b.run(n)
	})
	p := &proposal{cmd: cmd, done: make(chan struct{})}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return func() ([]byte, error) { return nil, errShutdown }
	}
	b.queue = append(b.queue, p)
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
	return p.wait
}

// BatchStats returns how many entries this node has proposed as leader
// and how many commands they held.
func (n *Node) BatchStats() (entries, commands int64) {
	return n.batch.entries.Load(), n.batch.cmds.Load()
}

// run forms and proposes entries until the node closes; then it fails
// whatever is still queued (the entries in flight fail by themselves:
// raft's shutdown ends their futures).
func (b *batcher) run(n *Node) {
	defer func() {
		b.mu.Lock()
		q := b.queue
		b.queue, b.closed = nil, true
		b.mu.Unlock()
		for _, p := range q {
			p.err = errShutdown
			close(p.done)
		}
	}()
	for {
		select {
		case <-n.stop:
			return
		case <-b.wake:
		}
		for {
			// A slot first, then the queue: what arrives while every
			// slot is taken joins the next entry.
			select {
			case <-n.stop:
				return
			case b.window <- struct{}{}:
			}
			ps := b.take()
			if len(ps) == 0 {
				<-b.window
				break
			}
			b.propose(n, ps)
		}
	}
}

// take removes the oldest queued commands that fit one entry (at least
// one) and returns them.
func (b *batcher) take() []*proposal {
	b.mu.Lock()
	defer b.mu.Unlock()
	k, size := 0, 0
	for k < len(b.queue) && k < maxBatchCmds {
		s := cmdSize(b.queue[k].cmd)
		if k > 0 && size+s > maxBatchBytes {
			break
		}
		size += s
		k++
	}
	ps := make([]*proposal, k)
	copy(ps, b.queue)
	clear(b.queue[:k]) // no references kept by the backing array
	b.queue = b.queue[k:]
	if len(b.queue) == 0 {
		b.queue = nil
	}
	return ps
}

// propose proposes ps as one entry and hands each its reply when the
// entry is applied. REQUIRES: a window slot taken, which it gives back.
func (b *batcher) propose(n *Node, ps []*proposal) {
	now := time.Now().UnixNano()
	var data []byte
	if len(ps) == 1 {
		data = EncodeEntry(Entry{At: now, Cmd: ps[0].cmd})
	} else {
		cmds := make([][][]byte, len(ps))
		for i, p := range ps {
			cmds[i] = p.cmd
		}
		data = EncodeBatch(Batch{At: now, Cmds: cmds})
	}
	b.entries.Add(1)
	b.cmds.Add(int64(len(ps)))
	var f raft.ApplyFuture
	if n.raft.State() != raft.Leader {
		f = errFuture{raft.ErrNotLeader}
	} else {
		f = n.raft.Apply(data, n.cfg.ApplyTimeout)
	}
	go func() {
		defer func() { <-b.window }()
		err := n.futureErr(f)
		if err != nil {
			err = n.applyErr(err)
		}
		var resp any
		if err == nil {
			resp = f.Response()
		}
		for i, p := range ps {
			if err != nil {
				p.err = err
			} else {
				p.reply, p.err = replyOf(resp, i, len(ps))
			}
			close(p.done)
		}
	}()
}

// replyOf returns the reply of command i of an entry of n commands from
// the entry's response (fsm.ApplyBatch).
func replyOf(resp any, i, n int) ([]byte, error) {
	switch r := resp.(type) {
	case []byte: // a lone command's, or a damaged entry's (the same for all)
		return r, nil
	case [][]byte:
		if len(r) == n {
			return r[i], nil
		}
	}
	return nil, errNoReply
}

var errNoReply = server.NewError("internal error: replicated command has no reply")

// applyErr is the client's error for an entry raft did not apply.
func (n *Node) applyErr(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrEnqueueTimeout):
		return n.notLeader()
	case errors.Is(err, raft.ErrLeadershipTransferInProgress):
		// Refused before it was appended. Wait for the transfer to end
		// (it takes milliseconds), so that the client's retry is
		// redirected to the new leader rather than refused again.
		return n.awaitTransfer()
	case errors.Is(err, raft.ErrRaftShutdown):
		return errShutdown
	}
	// ErrLeadershipLost and the like: the entry was appended and may yet
	// commit under the next leader.
	return server.NewError("replication failed (" + err.Error() + "): the command may or may not have been applied; read before retrying it")
}

// errNoAnswer: raft shut down without answering a future it had taken.
var errNoAnswer = errors.New("raft shut down without answering")

// futureErr waits for f's outcome. With BatchApplyCh, raft's apply queue
// is buffered, and a future raft took into it but had not yet read when it
// shut down is never answered: nothing drains the queue after shutdown
// (found by TestBatchLeadershipLoss, whose clients then waited for good).
// So the wait also ends once raft has shut down, with errNoAnswer: whether
// the entry was appended is then unknown. The goroutine left waiting on
// such a future ends with the process.
func (n *Node) futureErr(f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-tick.C:
			if n.raft.State() != raft.Shutdown {
				continue
			}
			// Raft answers what it had read before it stopped: give
			// those answers a moment to land.
			select {
			case err := <-done:
				return err
			case <-time.After(200 * time.Millisecond):
				return errNoAnswer
			}
		}
	}
}

// errFuture is an ApplyFuture that failed before raft saw it.
type errFuture struct{ err error }

func (f errFuture) Error() error  { return f.err }
func (f errFuture) Response() any { return nil }
func (f errFuture) Index() uint64 { return 0 }
