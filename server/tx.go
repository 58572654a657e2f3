package server

import (
	"bytes"
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
// EXEC runs the queued commands one after another while holding txMu
// exclusively; every other command of every connection holds txMu shared
// while it runs (conn.exec), so none interleaves with a transaction. The
// queued commands' replies are built in memory and sent as one array once
// the lock is released, so a client slow to read cannot stall the server
// while it holds the lock. A command that fails when it runs (an unknown
// collection, a bad vector) has its error as its element of the array and
// the others still run: there is no rollback, as in Redis.
//
// The shared hold costs every command an uncontended RLock and RUnlock.
// Measured as CPU time per operation (test binaries before and after,
// alternating, 8 rounds, 2 cores under load): BenchmarkExecPing went from
// 62 to 70 ns, BenchmarkExecPingParallel from 70 to 77 ns, and
// BenchmarkExecMemGet stayed at 740 ns.
//
// Durability: a write queued in a transaction does not wait for its own
// fsync (Ctx.AfterDurable records its token instead); EXEC's reply waits
// for one durability wait covering every write of the transaction before
// it leaves the server (durable.go), and if that wait fails the
// connection is closed without the reply, as for a pipeline.
//
// An EXEC waits for the commands running when it arrives (a long
// MEM.RETRIEVE, a MEM.CHECKPOINT) to finish, and, since sync.RWMutex lets
// no new reader in while a writer waits (so that EXEC cannot be starved),
// commands arriving meanwhile wait behind it.
//
// Waiting with txMu held: a command that waits for the socket (a reply
// larger than the output buffer, a slow reader) or for an fsync lets go of
// its shared hold for the wait and takes it back afterwards, so that
// neither a slow client nor a slow disk holds up a transaction, and, since
// a waiting EXEC holds up every new command, the whole server.
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

// lockShared takes txMu shared for the command about to run.
// REQUIRES: called by the connection's goroutine, not holding it.
func (c *conn) lockShared() {
	c.srv.txMu.RLock()
	c.sharedHeld = true
}

// unlockShared gives back what lockShared took.
// REQUIRES: called by the connection's goroutine, holding it.
func (c *conn) unlockShared() {
	c.sharedHeld = false
	c.srv.txMu.RUnlock()
}

// pauseShared lets go of txMu, if the connection holds it shared, for a
// wait that must not hold up a transaction (a socket write, an fsync), and
// reports whether it did; resumeShared takes it back. Use as
// defer c.resumeShared(c.pauseShared()).
// REQUIRES: called by the connection's goroutine; no engine lock held.
func (c *conn) pauseShared() (paused bool) {
	if !c.sharedHeld {
		return false
	}
	c.unlockShared()
	return true
}

// resumeShared undoes pauseShared.
func (c *conn) resumeShared(paused bool) {
	if paused {
		c.lockShared()
	}
}

// refuse answers a command refused before it ran (unknown, not allowed,
// too few arguments) and, inside MULTI, marks the transaction so that EXEC
// runs nothing.
func (c *conn) refuse(err error) {
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
	// The reply was built in memory; it counts against the client-memory
	// budget until it is handed to the connection's writer.
	n := int64(reply.Len())
	cn.srv.budget.charge(n)
	c.WriteArrayHeader(len(tx.cmds))
	c.raw(reply.Bytes())
	cn.srv.budget.Release(n)
	return nil
}

// runTx runs tx's commands with txMu held exclusively, their replies going
// to a buffer, which it returns; ok is false if a command panicked or
// wrote part of a reply and failed (the rest were not run).
// REQUIRES: called by the connection's goroutine, not holding txMu.
func (cn *conn) runTx(tx *txState) (reply *bytes.Buffer, ok bool) {
	reply = new(bytes.Buffer)
	mem := NewWriter(reply)
	real, cmd := cn.w, cn.hctx.cmd
	cn.w, cn.hctx.Writer = mem, mem
	cn.inExec = true
	// Crash atomicity (tx_atomic.go): the queued commands' records form
	// one group of the log, committed before the lock is released.
	beginGroup := cn.prepareTxGroup(tx.cmds)
	cn.srv.txMu.Lock()
	commitGroup := beginGroup()
	defer func() {
		commitGroup()
		cn.srv.txMu.Unlock()
		cn.inExec = false
		cn.w, cn.hctx.Writer, cn.hctx.cmd = real, real, cmd
	}()
	start := cn.srv.sinceStart()
	for _, q := range tx.cmds {
		// Checked again: a queued AUTH may have changed the user.
		if err := cn.allowed(q.cmd); err != nil {
			q.cmd.stats.rejected.Add(1)
			mem.WriteErr(err)
			continue
		}
		if !cn.run(q.cmd, q.args, start) {
			return nil, false
		}
		start = cn.clock
	}
	mem.Flush() // into reply: cannot fail
	return reply, true
}

// charge takes n bytes from the budget even past its limit, for memory
// already allocated that must be held (a transaction's reply: its writes
// have happened, so it cannot be refused).
func (b *Budget) charge(n int64) {
	used := b.used.Add(n)
	for p := b.peak.Load(); used > p && !b.peak.CompareAndSwap(p, used); p = b.peak.Load() {
	}
}
