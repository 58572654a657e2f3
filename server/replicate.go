package server

import (
	"bytes"
	"context"
	"net"
	"strconv"
	"time"
)

// Replication hook (docs/CLUSTER.md "Replication").
//
// With a Replicator set (SetReplicator), a connection does not run a
// command that changes data itself: it copies the command (name and
// arguments) and hands it to the Replicator, which proposes it to the
// shard's raft group and returns the raw RESP reply that applying it
// produced on the leader; that reply is written to the client verbatim.
// Every replica applies the same committed command through Apply, which
// runs it against the registered handlers on a context of its own (no
// socket) and returns the reply bytes. A transaction (MULTI … EXEC) that
// holds at least one such command is proposed as ONE entry carrying all
// its queued commands, so that every replica applies it whole and without
// interleaving (Apply holds txMu exclusively for it: stricter than a local EXEC,
// which holds only its collections, txlocks.go).
//
// Which commands are replicated: every command registered without
// ReadOnly, except those flagged Local (they act on this node's files or
// state only: MEM.CHECKPOINT, MEM.VERIFY, MEM.COMPACT, SLOWLOG, and the
// replica package's RAFT.ADD, RAFT.REMOVE and RAFT.SNAPSHOT).
//
// Reads: a Replicator that also implements ReadGate is asked before each
// read-only memory command (name MEM.*) runs locally, so that a leader
// can make sure it still leads (linearizable reads) and a follower can
// refuse or allow a stale read.
//
// Locks: the proposing connection lets go of its shared hold of txMu
// while it waits for the Replicator (as for an fsync, tx.go): Apply of a
// committed transaction takes txMu exclusively, and the proposer waits
// for that very Apply.

// Local marks a command that is never replicated, though it is not
// ReadOnly: it acts on this node only (its files, its counters, its raft
// membership).
const Local CommandFlag = 1 << 5

// Replicator proposes a command to the replicas and returns the RESP reply
// the command produced when applied (see Apply). cmd is the command name
// followed by its arguments; it is the Replicator's own copy. An error is
// written to the client as an error reply (a *ReplyError keeps its code),
// and must mean that the command was not applied, or that its outcome is
// unknown, which the error's text must then say.
//
// Replicate is called from many connections concurrently, with no server
// lock held.
type Replicator interface {
	Replicate(c *Ctx, cmd [][]byte) (reply []byte, err error)
}

// ReadGate is implemented by a Replicator that must approve local reads:
// BeforeRead is called before a read-only memory command runs on this
// node (once for a transaction of reads), and an error is the client's
// reply instead of the read's. It is called with no server lock held.
type ReadGate interface {
	BeforeRead(c *Ctx) error
}

// SetReplicator makes the server replicate every write through r (see
// above). Call it before Serve; nil turns replication off.
func (s *Server) SetReplicator(r Replicator) {
	if r == nil {
		s.repl.Store(nil)
		return
	}
	s.repl.Store(&r)
}

// WithoutTxLock runs fn without the connection's shared hold of the
// transaction lock (tx.go), for a handler that waits for something that
// may itself wait for a transaction: a raft commit, whose application
// of an EXEC entry takes the lock exclusively. REQUIRES: no engine lock
// held (as for any wait).
func (c *Ctx) WithoutTxLock(fn func()) {
	defer c.conn.resumeShared(c.conn.pauseShared())
	fn()
}

// InTransaction reports whether the command runs as part of an EXEC (a
// client's, or a replicated transaction entry), holding the transaction
// lock exclusively: a handler that would wait for something needing that
// lock must refuse.
func (c *Ctx) InTransaction() bool { return c.conn.inExec }

// replicator returns the Replicator set, or nil.
func (s *Server) replicator() Replicator {
	if p := s.repl.Load(); p != nil {
		return *p
	}
	return nil
}

// replicated reports whether cmd is proposed rather than run locally.
func (cmd *command) replicated() bool { return cmd.flags&(ReadOnly|Local|flagNotQueued) == 0 }

// memRead reports whether cmd is a read of memory data, which a ReadGate
// approves.
func (cmd *command) memRead() bool {
	return cmd.flags&ReadOnly != 0 && len(cmd.name) > 4 && cmd.name[:4] == "mem."
}

// call runs cmd: through the Replicator if one is set and cmd changes
// data, otherwise its handler. args include the name.
// REQUIRES: called by the connection's goroutine.
func (c *conn) call(cmd *command, args [][]byte) error {
	if !c.applying {
		if r := c.srv.replicator(); r != nil {
			if cmd.replicated() {
				return c.propose(r, copyArgs(args))
			}
			if g, ok := r.(ReadGate); ok && cmd.memRead() && !c.inExec {
				if err := c.gate(g); err != nil {
					return err
				}
			}
		}
	}
	return cmd.fn(&c.hctx, args[1:])
}

// gate asks g whether a read may run here, without txMu held.
func (c *conn) gate(g ReadGate) error {
	defer c.resumeShared(c.pauseShared())
	return g.BeforeRead(&c.hctx)
}

// propose hands cmd to r and writes the reply r returns.
// REQUIRES: called by the connection's goroutine.
func (c *conn) propose(r Replicator, cmd [][]byte) error {
	paused := c.pauseShared() // Apply of a transaction takes txMu exclusively
	reply, err := r.Replicate(&c.hctx, cmd)
	c.resumeShared(paused)
	if err != nil {
		return err
	}
	c.w.raw(reply)
	return nil
}

// copyArgs copies args into one allocation.
func copyArgs(args [][]byte) [][]byte {
	n := 0
	for _, a := range args {
		n += len(a)
	}
	buf := make([]byte, 0, n)
	out := make([][]byte, len(args))
	for i, a := range args {
		buf = append(buf, a...)
		out[i] = buf[len(buf)-len(a) : len(buf) : len(buf)]
	}
	return out
}

// execTx proposes a transaction holding a replicated command as one entry
// and writes its reply; it reports false (and does nothing) when the
// transaction must run locally: no Replicator, or only reads.
// REQUIRES: called by the connection's goroutine, not holding txMu.
func (c *conn) execTx(tx *txState) (handled bool, err error) {
	if c.applying {
		return false, nil
	}
	r := c.srv.replicator()
	if r == nil {
		return false, nil
	}
	writes := false
	for _, q := range tx.cmds {
		writes = writes || q.cmd.replicated()
	}
	if !writes {
		if g, ok := r.(ReadGate); ok {
			if err := g.BeforeRead(&c.hctx); err != nil {
				return true, err
			}
		}
		return false, nil
	}
	for _, q := range tx.cmds {
		// Checked at queue time; checked again as runTx does, since a
		// queued AUTH may have changed the user (its effect on this
		// connection is lost: the entry runs on no connection).
		if err := c.allowed(q.cmd); err != nil {
			return true, err
		}
		if q.cmd.flags&Local != 0 {
			return true, errLocalInTx(q.cmd.name)
		}
	}
	return true, c.propose(r, EncodeExec(tx.args()))
}

// errLocalInTx refuses a transaction that holds a write and a Local
// command: the write makes it one replicated entry, applied on every
// replica, and a Local command acts on one node only (and may wait for
// raft, which would be applying the entry).
func errLocalInTx(name string) error {
	return NewError("'" + name + "' acts on this node only and cannot be in a MULTI/EXEC with a write (the transaction is replicated whole); the transaction was discarded")
}

// args returns the queued commands' arguments, names included.
func (tx *txState) args() [][][]byte {
	out := make([][][]byte, len(tx.cmds))
	for i, q := range tx.cmds {
		out[i] = q.args
	}
	return out
}

// execEntryName is the first element of a transaction's entry.
const execEntryName = "EXEC"

// EncodeExec returns the entry of a transaction of cmds (each a name and
// its arguments): "EXEC", then for each command its argument count (name
// included, decimal) followed by its arguments. Apply runs such an entry
// as EXEC runs a queue. The slices of cmds are shared, not copied.
func EncodeExec(cmds [][][]byte) [][]byte {
	n := 1
	for _, c := range cmds {
		n += 1 + len(c)
	}
	out := make([][]byte, 0, n)
	out = append(out, []byte(execEntryName))
	for _, c := range cmds {
		out = append(out, []byte(strconv.Itoa(len(c))))
		out = append(out, c...)
	}
	return out
}

// decodeExec splits a transaction entry (after its "EXEC") into commands,
// or reports false for a malformed one.
func decodeExec(rest [][]byte) ([][][]byte, bool) {
	var cmds [][][]byte
	for len(rest) > 0 {
		n, err := strconv.Atoi(string(rest[0]))
		if err != nil || n < 1 || n > len(rest)-1 {
			return nil, false
		}
		cmds = append(cmds, rest[1:1+n])
		rest = rest[1+n:]
	}
	return cmds, true
}

// errBadEntry answers an entry Apply cannot read: it was proposed by a
// different version, or damaged (the entry codec checksums entries, so
// this should not happen).
var errBadEntry = NewError("replicated entry is malformed; nothing was applied")

// Apply runs one replicated command, or a transaction entry (EncodeExec),
// against the registered handlers and returns the RESP reply it produced.
// It is what a replica's state machine calls for each committed entry, on
// every replica, in log order. The command runs as a client with full
// access on a connection of its own (connection commands such as CLIENT
// SETNAME inside a transaction therefore change no client's state), with
// the checks a client's command gets (known, enough arguments). It never
// proposes anything itself. Apply is NewApplier, Applier.Apply and
// Applier.Wait (whose failure replaces the reply).
//
// Apply is safe for concurrent use, but the state machine calls it from
// one goroutine, in order: that order is what makes replicas identical.
func (s *Server) Apply(cmd [][]byte) []byte {
	a := s.NewApplier()
	defer a.Close()
	reply := a.Apply(cmd)
	if err := a.Wait(); err != nil {
		return errorReply(err)
	}
	return reply
}

// Applier applies a batch of replicated commands one after another (as
// Server.Apply does each), with one durability wait for all of them
// (Wait) instead of one each: a state machine applying a batch of
// committed entries waits once. Not safe for concurrent use.
type Applier struct {
	cn  *conn
	buf bytes.Buffer
}

// NewApplier returns an Applier; Close it when done.
func (s *Server) NewApplier() *Applier {
	a := &Applier{}
	a.cn = s.applyConn(&a.buf)
	return a
}

// Apply runs cmd (see Server.Apply) and returns its reply, which may
// acknowledge a change not yet durable per the engine's sync policy until
// Wait returns nil.
func (a *Applier) Apply(cmd [][]byte) []byte {
	cn, s := a.cn, a.cn.srv
	a.buf.Reset()
	if len(cmd) == 0 {
		cn.w.WriteErr(errBadEntry)
	} else if len(cmd) > 1 && bytes.EqualFold(cmd[0], []byte(execEntryName)) {
		cmds, ok := decodeExec(cmd[1:])
		if !ok {
			cn.w.WriteErr(errBadEntry)
		} else {
			cn.applyTx(cmds)
		}
	} else {
		s.txMu.RLock()
		cn.sharedHeld = true
		cn.applyOne(cmd, s.sinceStart())
		if cn.sharedHeld {
			cn.sharedHeld = false
			s.txMu.RUnlock()
		}
	}
	cn.w.Flush() // into buf: cannot fail
	return bytes.Clone(a.buf.Bytes())
}

// Wait waits until every change applied so far is durable per the
// engine's sync policy.
func (a *Applier) Wait() error { return a.cn.releaseHold() }

// Close releases the Applier.
func (a *Applier) Close() { a.cn.cancel() }

// errorReply is err as a RESP error reply.
func errorReply(err error) []byte {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.WriteErr(err)
	w.Flush()
	return buf.Bytes()
}

// applyOne runs one command on an apply connection, writing its reply (or
// why it was refused) to cn.w, and reports whether the replies written so
// far can be trusted (false after a handler panicked or failed mid-reply).
func (cn *conn) applyOne(args [][]byte, start time.Duration) bool {
	cmd := cn.srv.lookup(args[0])
	switch {
	case cmd == nil:
		cn.srv.obs.unknown.Add(1)
		cn.w.WriteErr(errUnknownCommand(args))
		return true
	case len(args)-1 < cmd.minArgs:
		cmd.stats.rejected.Add(1)
		cn.w.WriteErr(errWrongArity(cmd.name))
		return true
	case cmd.flags&(flagNotQueued|Local) != 0:
		// Never proposed (execTx refuses a transaction holding a Local
		// command); refused here too, since a Local command may wait for
		// the raft goroutine that is applying this very entry.
		cn.w.WriteErr(NewError("'" + cmd.name + "' cannot be replicated"))
		return true
	}
	if err := cn.srv.slotGuard(cmd, args); err != nil { // setslot_apply.go
		cn.w.WriteErr(err)
		return true
	}
	return cn.run(cmd, args, start)
}

// applyTx runs a transaction entry's commands as EXEC does: txMu held
// exclusively, one array of their replies.
func (cn *conn) applyTx(cmds [][][]byte) {
	reply := new(bytes.Buffer)
	mem := NewWriter(reply)
	real := cn.w
	cn.w, cn.hctx.Writer = mem, mem
	cn.inExec = true
	// Crash-atomic on this node's log, as runTx (tx_atomic.go).
	queued := make([]queuedCmd, len(cmds))
	for i, args := range cmds {
		queued[i] = queuedCmd{cmd: cn.srv.lookup(args[0]), args: args}
	}
	beginGroup := cn.prepareTxGroup(queued)
	cn.srv.txMu.Lock()
	commitGroup := beginGroup()
	start := cn.srv.sinceStart()
	cn.cmdStart = start // the entry's busy-timeout (busy.go)
	ok := true
	for _, args := range cmds {
		if ok = cn.applyOne(args, start); !ok {
			break
		}
		start = cn.srv.sinceStart()
	}
	commitGroup()
	cn.srv.txMu.Unlock()
	cn.inExec = false
	cn.endCmdCtx()
	cn.w, cn.hctx.Writer = real, real
	mem.Flush()
	if !ok {
		real.WriteError("internal error while executing a command inside EXEC; the commands before it ran")
		return
	}
	real.WriteArrayHeader(len(cmds))
	real.raw(reply.Bytes())
}

// applyConn returns a connection with no socket whose replies go to out,
// for Apply.
func (s *Server) applyConn(out *bytes.Buffer) *conn {
	// deferDurable: AfterDurable records tokens, Applier.Wait waits.
	c := &conn{srv: s, nc: applyNetConn{}, id: -1, created: time.Now(), applying: true, deferDurable: true, user: fullAccess}
	c.rd = NewReader(bytes.NewReader(nil), s.cfg.Limits)
	c.w = NewWriter(out)
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.hctx = Ctx{Writer: c.w, conn: c}
	return c
}

// applyNetConn is the socket of an apply connection: it has an address
// (SLOWLOG and CLIENT INFO show it) and nothing else.
type applyNetConn struct{ net.Conn }

// applyAddr is an apply connection's address.
type applyAddr struct{}

func (applyAddr) Network() string { return "raft" }
func (applyAddr) String() string  { return "raft-apply:0" }

func (applyNetConn) RemoteAddr() net.Addr             { return applyAddr{} }
func (applyNetConn) LocalAddr() net.Addr              { return applyAddr{} }
func (applyNetConn) SetDeadline(time.Time) error      { return nil }
func (applyNetConn) SetReadDeadline(time.Time) error  { return nil }
func (applyNetConn) SetWriteDeadline(time.Time) error { return nil }
func (applyNetConn) Close() error                     { return nil }
func (applyNetConn) Write(p []byte) (int, error)      { return len(p), nil }
func (applyNetConn) Read(p []byte) (int, error)       { return 0, net.ErrClosed }
