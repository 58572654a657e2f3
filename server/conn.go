package server

import (
	"bytes"
	"context"
	"errors"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// conn is one client connection, served by its own goroutine (serve).
type conn struct {
	srv     *Server
	nc      net.Conn
	id      int64
	created time.Time
	rd      *Reader
	w       *Writer
	hctx    Ctx // reused for every command of this connection

	// ctx is cancelled when the connection ends or is force-closed.
	ctx    context.Context
	cancel context.CancelFunc

	// closeAfter is set by a handler (QUIT) to end the connection after its
	// reply. Only the connection's goroutine touches it.
	closeAfter bool

	// throttle counts failed AUTHs and holds back their answers
	// (auth_throttle.go). Only the connection's goroutine touches it.
	throttle authThrottle

	// holdWait and holdToken are the durability wait that must return
	// before the buffered replies are sent (durable.go); holdToken 0
	// means none; holdErr is sticky. Only the connection's goroutine touches them.
	holdWait  func(uint64) error
	holdToken uint64
	holdErr   error // a failed hold: nothing more may be sent

	// clock is when the last command ended (a sinceStart reading), and the
	// start of the next one while clockValid: between the commands of a
	// pipeline that arrived together nothing waits, so one clock read per
	// command serves as the end of one and the start of the next (a clock
	// read costs ~100 ns on some virtual machines: 8% of a PING pipeline's
	// CPU when read twice). Reading input or flushing replies (beforeBlock)
	// makes it stale. Only the connection's goroutine touches them.
	clock      time.Duration
	clockValid bool

	// lastLookup is the command this connection ran last: a pipeline
	// usually repeats one command, and comparing its name costs less than
	// a map look-up (commands are never unregistered, so it stays valid).
	// Only the connection's goroutine touches it.
	lastLookup *command

	// tx is the transaction being queued since MULTI, or nil (tx.go).
	// sharedHeld is set while the goroutine holds Server.txMu shared for
	// a command, so that a wait for the socket or an fsync can let go of
	// it (tx.go); inExec is set while EXEC runs the queued commands.
	// Only the connection's goroutine touches them.
	tx         *txState
	sharedHeld bool
	inExec     bool
	// collHeld is the collection lock the running command holds shared
	// (txlocks.go), or nil; pauseShared lets go of it too. Only the
	// connection's goroutine touches it.
	collHeld *collLock

	// The running command's context (busy.go), made by Ctx.Context:
	// cmdCtx is nil until then; cmdStart is when the command (an EXEC as
	// a whole) started, a sinceStart reading; peer is the socket the
	// watcher polls, looked up once (peerChecked). Only the connection's
	// goroutine touches them.
	cmdCtx       context.Context
	cmdCancel    context.CancelCauseFunc
	cmdStopTimer context.CancelFunc
	cmdWatch     *time.Timer
	cmdStart     time.Duration
	peer         syscall.RawConn
	peerChecked  bool

	// applying marks a connection of Server.Apply (replicate.go): its
	// commands run here, never proposed again; deferDurable makes
	// AfterDurable record every token for one later wait (Applier.Wait).
	// Set at creation.
	applying     bool
	deferDurable bool

	// pending are the replies of writes proposed and not yet written, oldest
	// first, and pendingBytes their arguments' size (replicate_pipeline.go).
	// Only the connection's goroutine touches them.
	pending      []pendingReply
	pendingBytes int

	// readonly is set by READONLY and cleared by READWRITE and RESET: in
	// cluster mode the connection's reads may be served by a node that
	// does not lead their shard (route.go). Only the connection's
	// goroutine touches it.
	readonly bool
	// asking is set by ASKING and cleared by the next command's routing
	// (route.go takeAsking): it admits that command to a slot this
	// node's shard is importing. Only the connection's goroutine
	// touches it.
	asking bool

	// frameStart is when the command being read began to arrive (zero
	// between commands); see readDeadline. Only the connection's goroutine
	// touches it.
	frameStart time.Time

	// lastActive is when the last command started, in nanoseconds since
	// the server started on the monotonic clock (Server.sinceStart: one
	// cheap clock read, shared with the command's timing).
	lastActive atomic.Int64

	mu      sync.Mutex // guards the fields below, read by CLIENT LIST from other connections
	name    string     // CLIENT SETNAME / HELLO SETNAME
	libName string     // CLIENT SETINFO LIB-NAME
	libVer  string     // CLIENT SETINFO LIB-VER
	lastCmd string     // name of the last command executed
	// user is who the client authenticated as; nil until it has, when
	// the server requires authentication. Written by the connection's
	// goroutine under mu, so that goroutine reads it without the lock.
	user *User
}

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{
		srv:     s,
		nc:      nc,
		id:      s.nextID.Add(1),
		created: time.Now(),
	}
	c.rd = NewReader(deadlineReader{c}, s.cfg.Limits)
	c.rd.SetBudget(&s.budget)
	if s.auth.required() {
		c.rd.SetLimits(s.cfg.PreAuthLimits)
	} else {
		c.user = fullAccess
	}
	c.w = NewWriter(holdWriter{c})
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.hctx = Ctx{Writer: c.w, conn: c}
	c.lastActive.Store(int64(c.created.Sub(s.start)))
	// Flush replies whenever the reader is about to wait for input: a
	// pipeline that arrived together is answered with one write.
	c.rd.SetBeforeBlock(c.beforeBlock)
	return c
}

// serve runs the read-execute loop until the client leaves, sends a
// malformed frame, QUITs, or the server shuts down.
func (c *conn) serve() {
	defer func() {
		c.settle()  // replicate_pipeline.go
		c.w.Flush() // best effort: replies to the commands already executed
		c.endTx()   // a transaction never EXECed runs nothing (tx.go)
		c.nc.Close()
		c.rd.Release()
		c.cancel()
		c.srv.removeConn(c)
	}()
	for !c.closeAfter && !c.srv.closing.Load() {
		args, err := c.rd.ReadCommand()
		if err != nil {
			c.settle() // replies in order (replicate_pipeline.go)
			var pe *ProtocolError
			var re *ReplyError
			switch {
			case errors.As(err, &re): // over the client memory budget
				c.w.WriteErr(re)
				c.srv.log.Warn("server: request refused: client buffers at maxmemory; connection closed",
					"client", c.id, "addr", c.nc.RemoteAddr(), "maxmemory", c.srv.budget.Limit())
			case errors.As(err, &pe):
				c.w.WriteError(pe.Error())
				c.srv.log.Debug("server: protocol error", "client", c.id, "addr", c.nc.RemoteAddr(), "err", pe)
			case isTimeout(err) && !c.srv.closing.Load():
				c.srv.statTimeouts.Add(1)
				c.srv.log.Debug("server: client timed out", "client", c.id, "addr", c.nc.RemoteAddr(), "mid_command", c.rd.InCommand())
			}
			return
		}
		c.frameStart = time.Time{} // the next frame's clock starts at its own first read
		c.srv.statCmds.Add(1)
		if !c.exec(args) {
			return
		}
		if c.throttle.hold > 0 {
			c.holdAuthAnswer() // no lock held here (auth_throttle.go)
		}
	}
}

// exec runs one command and reports whether the connection may continue.
func (c *conn) exec(args [][]byte) (keep bool) {
	start := c.clock
	if !c.clockValid {
		start = c.srv.sinceStart()
	}
	c.lastActive.Store(int64(start))
	if looksLikeHTTP(args) {
		c.srv.statHTTPProbes.Add(1)
		c.srv.log.Warn("server: possible SECURITY ATTACK detected: a client sent an HTTP request line or header "+
			"(a cross-protocol attack, e.g. a web page posting commands); connection closed",
			"client", c.id, "addr", c.nc.RemoteAddr(), "line", truncate(string(args[0]), 32))
		return false
	}
	cmd := c.lastLookup
	if cmd == nil || !bytes.EqualFold(args[0], []byte(cmd.name)) {
		cmd = c.srv.lookup(args[0])
		c.lastLookup = cmd
	}
	if cmd == nil {
		c.srv.obs.unknown.Add(1)
		if c.user == nil {
			c.refuse(errNoAuth) // say nothing of the command set before AUTH
		} else {
			c.refuse(errUnknownCommand(args))
		}
		return true
	}
	if err := c.allowed(cmd); err != nil {
		cmd.stats.rejected.Add(1)
		c.refuse(err)
		return true
	}
	c.mu.Lock()
	c.lastCmd = cmd.name
	c.mu.Unlock()
	if len(args)-1 < cmd.minArgs {
		cmd.stats.rejected.Add(1)
		c.refuse(errWrongArity(cmd.name))
		return true
	}
	if b := c.srv.router.Load(); b != nil && cmd.flags&flagNotQueued == 0 {
		if err := c.route(b, cmd, args); err != nil { // route.go
			c.refuse(err)
			return true
		}
	}
	if err := c.srv.refuseGrowth(cmd); err != nil { // datamem.go: --maxmemory
		cmd.stats.rejected.Add(1)
		c.refuse(err)
		return true
	}
	if c.tx != nil && cmd.flags&flagNotQueued == 0 {
		c.queue(cmd, args) // tx.go
		return true
	}
	if cmd.flags&flagNotQueued != 0 {
		c.settle() // replicate_pipeline.go
		// MULTI, EXEC, ...: connection state only; EXEC takes the
		// transaction lock exclusively itself.
		return c.run(cmd, args, start)
	}
	if c.proposePipelined(cmd, args, start) { // replicate_pipeline.go
		return true
	}
	c.settle()
	c.lockCmd(cmd, args) // txlocks.go
	defer c.unlockCmd()
	return c.run(cmd, args, start)
}

// run runs cmd's handler, records it (stats.go) and reports whether the
// connection may continue. start is when the command began (a sinceStart
// reading). The handler's replies go to c.w.
func (c *conn) run(cmd *command, args [][]byte, start time.Duration) (keep bool) {
	before := c.w.Written()
	if !c.inExec {
		c.cmdStart = start // the busy-timeout's start (busy.go)
	}
	defer func() {
		if !c.inExec {
			c.endCmdCtx()
		}
		if p := recover(); p != nil {
			c.srv.log.Error("server: command handler panicked; closing the connection",
				"command", cmd.name, "client", c.id, "panic", p, "stack", string(debug.Stack()))
			c.w.WriteError("internal error while executing '" + cmd.name + "'")
			c.srv.observe(c, cmd, args, start, true)
			keep = false
		}
	}()
	c.hctx.cmd = cmd
	errsBefore := c.w.errs
	// The handler, or the Replicator for a write (replicate.go).
	err := c.call(cmd, args)
	if err != nil && c.cmdCtx != nil {
		err = c.busyErr(err) // busy.go
	}
	c.clock = c.srv.observe(c, cmd, args, start, err != nil || c.w.errs != errsBefore) // stats.go
	c.clockValid = true
	wrote := c.w.Written() != before
	switch {
	case err == nil && !wrote:
		c.srv.log.Error("server: command handler sent no reply", "command", cmd.name)
		c.w.WriteError("internal error: '" + cmd.name + "' sent no reply")
	case err != nil && !wrote:
		c.w.WriteErr(err)
	case err != nil && wrote:
		// Part of a reply is out; appending an error would desynchronise
		// the client, so end the connection instead.
		c.srv.log.Error("server: command handler wrote a reply and returned an error; closing the connection",
			"command", cmd.name, "client", c.id, "err", err)
		return false
	}
	return true
}

// errUnknownCommand formats Redis's unknown-command error, quoting the
// first arguments up to about 128 bytes.
func errUnknownCommand(args [][]byte) *ReplyError {
	var b []byte
	b = append(b, "unknown command '"...)
	b = append(b, truncate(string(args[0]), 128)...)
	b = append(b, "', with args beginning with: "...)
	shown := 0
	for _, a := range args[1:] {
		if shown >= 128 {
			break
		}
		a = a[:min(len(a), 128-shown)]
		shown += len(a) + 3
		b = append(b, '\'')
		b = append(b, a...)
		b = append(b, "' "...)
	}
	return NewError(string(b))
}

// interrupt wakes the connection's goroutine if it is waiting for input,
// so it notices the shutdown; a command being executed is not disturbed.
func (c *conn) interrupt() { c.nc.SetReadDeadline(time.Now()) }

// beforeBlock runs when the Reader is about to wait for input: replies
// are flushed (one write for a pipeline), and the command clock is stale.
func (c *conn) beforeBlock() error {
	c.settle() // replicate_pipeline.go
	c.clockValid = false
	return c.w.Flush()
}

// forceClose ends the connection even if a command is executing.
func (c *conn) forceClose() {
	c.cancel()
	c.nc.Close()
}

func (c *conn) clientName() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.name
}
