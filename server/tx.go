package server

import (
	"strconv"
)

// Transactions: MULTI, EXEC, DISCARD (and WATCH, UNWATCH, RESET).
//
// MULTI starts queuing: every later command of the connection is checked
// as if it were to run now (known, allowed to this user, enough arguments,
// within the caps below), copied, and answered +QUEUED instead of being
// run. A command refused while queuing gets its error at once and marks
// the transaction, and EXEC then runs nothing and answers -EXECABORT, as
// Redis does: a client that pipelines MULTI … EXEC (redis-py's default
// pipeline, go-redis TxPipelined) reads the replies only at the end, so a
// transaction missing one of its commands must not run.
//
// EXEC runs the queued commands one after another, holding the locks
// txlocks.go describes: a transaction that writes holds the collections
// its commands name exclusively for its whole length (the whole server
// only if it has a write that names no collection), so no command on
// them interleaves with it; a transaction of reads only holds each
// command's collection shared while that command runs, as any command
// outside a transaction does, so it excludes no one (another client's
// write may land between two of its reads). The queued commands' replies
// are built in memory, reserved from the client-memory budget
// (txreply.go), and sent as one array once the locks are released, so a
// client slow to read cannot stall others while they are held. A command
// that fails when it runs (an unknown collection, a bad vector, a reply
// past maxmemory) has its error as its element of the array and the
// others still run: there is no rollback, as in Redis. The EXEC as a
// whole is one command for busy-timeout (busy.go).
//
// The shared hold costs every command an uncontended RLock and RUnlock
// (and, for a command that names a collection, a look-up in the lock
// table). Measured for txMu alone as CPU time per operation (test
// binaries before and after, alternating, 8 rounds, 2 cores under load):
// BenchmarkExecPing went from 62 to 70 ns, BenchmarkExecPingParallel
// from 70 to 77 ns, and BenchmarkExecMemGet stayed at 740 ns.
//
// Durability: a write queued in a transaction does not wait for its own
// fsync (Ctx.AfterDurable records its token instead); EXEC's reply waits
// for one durability wait covering every write of the transaction before
// it leaves the server (durable.go), and if that wait fails the
// connection is closed without the reply, as for a pipeline.
//
// An EXEC that writes waits for the commands running on its collections
// when it arrives (a long MEM.RETRIEVE, a MEM.COUNT … FILTER) to finish,
// and, since sync.RWMutex lets no new reader in while a writer waits (so
// that EXEC cannot be starved), commands on those collections arriving
// meanwhile wait behind it. Both waits are bounded by busy-timeout for
// commands that honour their context.
//
// Waiting with locks held: a command that waits for the socket (a reply
// larger than the output buffer, a slow reader) or for an fsync lets go
// of its shared holds for the wait and takes them back afterwards, so
// that neither a slow client nor a slow disk holds up a transaction, and,
// since a waiting EXEC holds up every new command on its collections,
// those.
// REQUIRES (of handlers): no engine lock is held across a reply write or
// an AfterDurable call, or such a wait would deadlock with a transaction
// that needs that lock.
//
// WATCH-free semantics: memrl has no keys to watch. WATCH answers an error
// (a client that relies on optimistic locking must learn it has none);
// UNWATCH answers +OK (there is never anything to unwatch). A transaction
// is never aborted by another client's writes: it runs whole at EXEC on
// whatever the data is then.

// DefaultMaxQueuedCommands is Config.MaxQueuedCommands's default.
const DefaultMaxQueuedCommands = 100_000

// Internal command flags (beside ReadOnly and NoAuth, registry.go).
const (
	// flagNotQueued marks a command that runs at once inside MULTI
	// (MULTI, EXEC, DISCARD, WATCH, QUIT, RESET). Such commands touch only
	// the connection, so they also run without txMu.
	flagNotQueued CommandFlag = 1 << 6
	// flagSkipSlowlog keeps a command out of the SLOWLOG: EXEC, whose
	// queued commands are logged one by one, as in Redis.
	flagSkipSlowlog CommandFlag = 1 << 7
)

// Per-command bookkeeping charged to the client-memory budget besides the
// argument bytes: a queued command's slot and each argument's slice header.
const (
	queuedCmdOverhead = 64
	queuedArgOverhead = 24
)

// Transaction errors, worded as Redis words them (clients match on them).
var (
	// errExecAbort answers EXEC for a transaction a command was refused in.
	errExecAbort        = &ReplyError{Code: "EXECABORT", Msg: "Transaction discarded because of previous errors."}
	errExecWithoutMulti = NewError("EXEC without MULTI")
	// errDiscardWithoutMulti: DISCARD outside a transaction changes nothing.
	errDiscardWithoutMulti = NewError("DISCARD without MULTI")
	// errNestedMulti: MULTI inside a transaction changes nothing; the
	// transaction goes on.
	errNestedMulti = NewError("MULTI calls can not be nested")
	// errWatchInMulti: WATCH inside a transaction changes nothing.
	errWatchInMulti = NewError("WATCH inside MULTI is not allowed")
	// errWatchUnsupported: memrl has no keys, so nothing can be watched
	// (see "WATCH-free semantics" above).
	errWatchUnsupported = NewError("WATCH is not supported: memrl has no keys to watch; " +
		"MULTI/EXEC run atomically without it (see docs/PROTOCOL.md, Transactions)")
)

// txState is a transaction being queued: the commands received since MULTI.
type txState struct {
	cmds []queuedCmd
	// reserved is what the queued commands hold of the client-memory
	// budget; given back when the transaction ends.
	reserved int64
	// aborted is set when a command was refused while queuing: EXEC will
	// run nothing.
	aborted bool
}

// queuedCmd is one queued command with its own copy of its arguments
// (the Reader's are overwritten by the next command).
type queuedCmd struct {
	cmd  *command
	args [][]byte // name included, as conn.run takes them
}

// registerTx registers the transaction commands. They are flagged ReadOnly
// (they change no data themselves: a read-only user may run a transaction
// of reads) and run at once inside MULTI.
func (s *Server) registerTx() {
	s.Register("multi", 0, cmdMulti, ReadOnly, flagNotQueued)
	s.Register("exec", 0, cmdExec, ReadOnly, flagNotQueued, flagSkipSlowlog)
	s.Register("discard", 0, cmdDiscard, ReadOnly, flagNotQueued)
	s.Register("watch", 1, cmdWatch, ReadOnly, flagNotQueued)
	s.Register("unwatch", 0, cmdUnwatch, ReadOnly) // queued inside MULTI, as in Redis
	s.Register("reset", 0, cmdReset, ReadOnly, NoAuth, flagNotQueued)
}

// pauseShared lets go of the locks the running command holds shared
// (txMu and its collection's lock, txlocks.go), if any, for a wait that
// must not hold up a transaction (a socket write, an fsync), and reports
// whether it did; resumeShared takes them back. Use as
// defer c.resumeShared(c.pauseShared()).
// REQUIRES: called by the connection's goroutine; no engine lock held.
func (c *conn) pauseShared() (paused bool) {
	if !c.sharedHeld {
		return false
	}
	if l := c.collHeld; l != nil {
		l.rw.RUnlock()
	}
	c.sharedHeld = false
	c.srv.txMu.RUnlock()
	return true
}

// resumeShared undoes pauseShared, in the locks' order (txMu first).
func (c *conn) resumeShared(paused bool) {
	if !paused {
		return
	}
	c.srv.txMu.RLock()
	c.sharedHeld = true
	if l := c.collHeld; l != nil {
		l.rw.RLock()
	}
}

// refuse answers a command refused before it ran (unknown, not allowed,
// too few arguments) and, inside MULTI, marks the transaction so that EXEC
// runs nothing.
func (c *conn) refuse(err error) {
	c.settle() // replies in order (replicate_pipeline.go)
	if c.tx != nil {
		c.tx.aborted = true
	}
	c.w.WriteErr(err)
}

// queue adds a checked command to the transaction and answers +QUEUED, or
// refuses it if the transaction is at its cap or the client-memory budget
// cannot hold it. A transaction already marked aborted keeps nothing more
// (EXEC will run nothing) but still answers +QUEUED, as Redis does.
// REQUIRES: c.tx != nil.
func (c *conn) queue(cmd *command, args [][]byte) {
	tx := c.tx
	if tx.aborted {
		c.w.WriteSimple("QUEUED")
		return
	}
	if lim := c.srv.cfg.MaxQueuedCommands; lim > 0 && len(tx.cmds) >= lim {
		c.refuse(NewError("the transaction already holds " + strconv.Itoa(lim) +
			" queued commands, the most allowed (max-queued-commands); EXEC will discard it"))
		return
	}
	size := int64(queuedCmdOverhead)
	for _, a := range args {
		size += int64(len(a)) + queuedArgOverhead
	}
	if !c.srv.budget.Reserve(size) {
		c.refuse(errClientMemory)
		return
	}
	tx.reserved += size
	var n int
	for _, a := range args {
		n += len(a)
	}
	buf := make([]byte, 0, n) // one allocation for every argument
	own := make([][]byte, len(args))
	for i, a := range args {
		buf = append(buf, a...)
		own[i] = buf[len(buf)-len(a) : len(buf) : len(buf)]
	}
	tx.cmds = append(tx.cmds, queuedCmd{cmd: cmd, args: own})
	c.w.WriteSimple("QUEUED")
}

// endTx forgets the transaction, if any, and gives back its memory.
// REQUIRES: called by the connection's goroutine.
func (c *conn) endTx() {
	if c.tx == nil {
		return
	}
	c.srv.budget.Release(c.tx.reserved)
	c.tx = nil
}

// MULTI
func cmdMulti(c *Ctx, args [][]byte) error {
	cn := c.conn
	if len(args) != 0 {
		return cn.txArity(c)
	}
	if cn.tx != nil {
		return errNestedMulti
	}
	cn.tx = &txState{}
	c.WriteOK()
	return nil
}

// DISCARD
func cmdDiscard(c *Ctx, args [][]byte) error {
	cn := c.conn
	if len(args) != 0 {
		return cn.txArity(c)
	}
	if cn.tx == nil {
		return errDiscardWithoutMulti
	}
	cn.endTx()
	c.WriteOK()
	return nil
}

// WATCH key [key ...]: see "WATCH-free semantics".
func cmdWatch(c *Ctx, args [][]byte) error {
	if c.conn.tx != nil {
		return errWatchInMulti
	}
	return errWatchUnsupported
}

// UNWATCH: nothing is ever watched.
func cmdUnwatch(c *Ctx, args [][]byte) error {
	if len(args) != 0 {
		return c.WrongArity()
	}
	c.WriteOK()
	return nil
}

// RESET: the connection's state as it was when it connected: the
// transaction, if any, is discarded, the client name cleared, and, on a
// server that requires authentication, the client must AUTH again.
// Replies +RESET.
func cmdReset(c *Ctx, args [][]byte) error {
	cn := c.conn
	if len(args) != 0 {
		return cn.txArity(c)
	}
	cn.endTx()
	cn.setName("")
	cn.readonly = false
	if cn.srv.auth.required() {
		cn.mu.Lock()
		cn.user = nil
		cn.mu.Unlock()
		cn.srv.perUser.leave(cn) // userconns.go
		cn.rd.SetLimits(cn.srv.cfg.PreAuthLimits)
	}
	c.WriteSimple("RESET")
	return nil
}

// txArity is the wrong-arity error of a transaction command; inside MULTI
// it marks the transaction, as any refused command does.
func (cn *conn) txArity(c *Ctx) error {
	if cn.tx != nil {
		cn.tx.aborted = true
	}
	return c.WrongArity()
}

// EXEC: run the queued commands; reply with the array of their replies.
func cmdExec(c *Ctx, args [][]byte) error {
	cn := c.conn
	tx := cn.tx
	if tx == nil {
		if len(args) != 0 {
			return c.WrongArity()
		}
		return errExecWithoutMulti
	}
	defer cn.endTx()
	if len(args) != 0 {
		// As Redis: a refused EXEC discards the transaction and says why.
		return &ReplyError{Code: "EXECABORT", Msg: "Transaction discarded because of: " + c.WrongArity().Error()}
	}
	if tx.aborted {
		return errExecAbort
	}
	if err := cn.routeTx(tx); err != nil { // cluster mode: route.go
		return err
	}
	// Router first, replicator second (docs/CLUSTER.md).
	if handled, err := cn.execTx(tx); handled { // proposed as one entry (replicate.go)
		return err
	}
	reply, ok := cn.runTx(tx)
	if !ok {
		// A queued command panicked, or failed after writing part of its
		// reply: the replies cannot be trusted, so none is sent.
		cn.closeAfter = true
		return NewError("internal error while executing a command inside EXEC; the commands before it ran; closing the connection")
	}
	// The reply was built in memory, reserved from the client-memory
	// budget (txreply.go) until it is handed to the connection's writer.
	c.WriteArrayHeader(len(tx.cmds))
	for _, b := range reply.chunks {
		c.raw(b)
	}
	reply.release()
	return nil
}

// runTx runs tx's commands with the locks txlocks.go describes, their
// replies going to a buffer held to the client-memory budget, which it
// returns (the caller releases it); ok is false if a command panicked or
// wrote part of a reply and failed (the rest were not run).
// REQUIRES: called by the connection's goroutine, holding no lock.
func (cn *conn) runTx(tx *txState) (reply *replyBuf, ok bool) {
	reply = &replyBuf{b: &cn.srv.budget}
	mem := NewWriter(reply)
	real, cmd := cn.w, cn.hctx.cmd
	cn.w, cn.hctx.Writer = mem, mem
	cn.inExec = true
	writes := txWrites(tx)
	// Crash atomicity (tx_atomic.go): the queued writes' records form one
	// group of the log, opened once the transaction's locks are held and
	// committed before they are released. prepareTxGroup may wait for a
	// running checkpoint, so it comes before any lock.
	beginGroup := cn.prepareTxGroup(tx.cmds)
	var held txLocks
	if writes {
		held = cn.lockTx(tx)
	}
	commitGroup := beginGroup()
	defer func() {
		commitGroup()
		if writes {
			cn.unlockTx(held)
		}
		cn.inExec = false
		cn.w, cn.hctx.Writer, cn.hctx.cmd = real, real, cmd
	}()
	start := cn.srv.sinceStart()
	// The EXEC's context (busy.go), made now so that its watcher notices
	// a client gone even if no queued command asks for it.
	ctx := cn.hctx.Context()
	for _, q := range tx.cmds {
		mark := reply.size // mem is flushed: every element so far is in reply
		// Checked again: a queued AUTH may have changed the user.
		if err := cn.allowed(q.cmd); err != nil {
			q.cmd.stats.rejected.Add(1)
			mem.WriteErr(err)
		} else if q.cmd.flags&ReadOnly != 0 && ctx.Err() != nil {
			// Past busy-timeout, or the client is gone: a read that has
			// not started does not run (a write still does: there is no
			// rollback, so the transaction's writes all run).
			mem.WriteErr(cn.busyErr(ctx.Err()))
		} else {
			if !writes {
				// A transaction of reads: each command holds its
				// collection only while it runs (txlocks.go).
				cn.lockCmd(q.cmd, q.args)
			}
			keep := cn.run(q.cmd, q.args, start)
			if !writes {
				cn.unlockCmd()
			}
			if !keep {
				reply.release()
				return nil, false
			}
			start = cn.clock
		}
		if err := mem.Flush(); err != nil || reply.refused {
			// The element did not fit in the budget: drop what the
			// command wrote, and say so in its place.
			reply.undo(mark)
			mem.bw.Reset(reply)
			reply.forcing = true
			mem.WriteErr(errTxReplyMemory)
			mem.Flush()
			reply.forcing = false
		}
	}
	return reply, true
}

// charge takes n bytes from the budget even past its limit, for memory
// that must be held (the -OOM element of a transaction's reply,
// txreply.go).
func (b *Budget) charge(n int64) {
	used := b.used.Add(n)
	for p := b.peak.Load(); used > p && !b.peak.CompareAndSwap(p, used); p = b.peak.Load() {
	}
}
