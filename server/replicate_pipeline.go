package server

import "time"

// Pipelined replication (docs/CLUSTER.md "Replication").
//
// A connection whose Replicator is a PipelinedReplicator does not wait for
// a write's raft commit before it reads and proposes the next command: it
// proposes the write (Propose returns at once) and keeps a pending reply,
// so that the writes a client pipelines are committed together (the
// replica package puts the writes that reach the leader meanwhile into one
// raft entry) instead of one commit after another. Replies stay in the
// order of the commands:
//
// INVARIANT: while a connection has pending replies, nothing else is
// written to its Writer. Every other path to the Writer first waits for
// every pending reply and writes it (settle): a command that is not a
// pipelined write (a read, MULTI/EXEC, a local command), a refusal,
// a flush before the connection waits for input (beforeBlock), and the end
// of the connection.
//
// Reads after writes: a read settles first, so it runs after the
// connection's earlier writes were applied on this node, as it would
// without pipelining. A transaction is still one command (EXEC, proposed
// as one entry after settling) and stays atomic.
//
// Errors stay per command: each pending write gets its own reply or error
// (-TRYAGAIN when it was not applied, or an error saying its outcome is
// unknown, as for a write waited for at once).

// PipelinedReplicator is a Replicator that can take a connection's next
// write before the previous one's reply. Propose queues cmd for
// replication and returns at once; wait returns what Replicate would have
// returned. Writes proposed one after another by one caller are applied
// in that order. wait is called once, from the proposing goroutine, with
// no server lock held; cmd is the Replicator's own copy.
type PipelinedReplicator interface {
	Replicator
	Propose(c *Ctx, cmd [][]byte) (wait func() ([]byte, error))
}

// Bounds on a connection's pending replies: past either, the connection
// waits for its oldest one before proposing more (the writes' copies are
// not counted against the client-memory budget). In practice the
// connection settles sooner, whenever its input buffer runs dry
// (beforeBlock), so these bound a client that keeps it full. Variables
// for tests only.
var (
	maxPendingReplies = 1024
	maxPendingBytes   = 8 << 20
)

// pendingReply is a proposed write whose reply is not written yet.
type pendingReply struct {
	cmd   *command
	args  [][]byte      // the proposed copy (SLOWLOG)
	start time.Duration // when the command started (sinceStart)
	size  int
	wait  func() ([]byte, error)
}

// proposePipelined proposes cmd without waiting for its reply, when this
// connection may: a PipelinedReplicator is set, cmd is replicated, and no
// transaction is being queued. It reports false (having done nothing)
// otherwise.
// REQUIRES: called by the connection's goroutine, holding no server lock.
func (c *conn) proposePipelined(cmd *command, args [][]byte, start time.Duration) bool {
	if c.applying || c.tx != nil || !cmd.replicated() {
		return false
	}
	r, ok := c.srv.replicator().(PipelinedReplicator)
	if !ok {
		return false
	}
	for len(c.pending) > 0 && (len(c.pending) >= maxPendingReplies || c.pendingBytes >= maxPendingBytes) {
		c.settleOne()
	}
	cp := copyArgs(args)
	size := 0
	for _, a := range cp {
		size += len(a)
	}
	c.pending = append(c.pending, pendingReply{cmd: cmd, args: cp, start: start, size: size, wait: r.Propose(&c.hctx, cp)})
	c.pendingBytes += size
	c.clockValid = false // the next command's start is read afresh
	return true
}

// settle waits for every pending reply, oldest first, and writes each.
// REQUIRES: called by the connection's goroutine, holding no server lock.
func (c *conn) settle() {
	for len(c.pending) > 0 {
		c.settleOne()
	}
}

// settleOne waits for the oldest pending reply and writes it.
func (c *conn) settleOne() {
	p := c.pending[0]
	c.pending[0] = pendingReply{}
	c.pending = c.pending[1:]
	if len(c.pending) == 0 {
		c.pending = c.pending[:0:0]
	}
	c.pendingBytes -= p.size
	reply, err := p.wait()
	c.srv.observe(c, p.cmd, p.args, p.start, err != nil || isErrorReply(reply))
	c.clockValid = false
	if err != nil {
		c.w.WriteErr(err)
		return
	}
	c.w.raw(reply)
}

// isErrorReply reports whether a RESP reply is an error.
func isErrorReply(reply []byte) bool { return len(reply) > 0 && reply[0] == '-' }
