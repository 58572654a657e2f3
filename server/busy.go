package server

import (
	"context"
	"errors"
	"net"
	"strconv"
	"syscall"
	"time"
)

// Busy commands: a time budget, and cancellation when the client leaves.
//
// Ctx.Context is the running command's own context, made the first time a
// handler asks for it (a command that never asks pays nothing). It ends:
//
//   - busy-timeout (Config.BusyTimeout, --busy-timeout) after the command
//     started, as Redis's busy-reply-threshold; an EXEC is one command: its
//     queued commands share the EXEC's budget;
//   - when the client disconnects while the command runs: the socket is
//     not read during a command, so a watcher looks at it (poll for a
//     hang-up, which consumes no input) every peerWatchEvery once the
//     command has run that long; a client that shuts down its sending
//     half counts as gone, as in Redis;
//   - when the connection is force-closed (Shutdown giving up).
//
// A handler that honours it returns ctx.Err() (or an error wrapping it);
// the server then replies, instead of that error:
//
//	-TIMEOUT the command ran past busy-timeout (5000 ms) and was stopped; …
//
// or, for a client gone or a server shutting down (a reply no one will
// read), an -ERR saying so. Inside EXEC that is the command's element, and
// once the EXEC's context has ended its queued reads that have not started
// get it without running (tx.go, runTx), while its writes still run: a
// write is never stopped, half done or not started, since a transaction's
// writes have no rollback.

// peerWatchEvery is how long a command runs before the watcher first
// looks for its client's hang-up, and how often it looks again.
const peerWatchEvery = 25 * time.Millisecond

// Causes of a command context's end (context.Cause).
var (
	errBusyTimeout = errors.New("busy-timeout")
	errClientGone  = errors.New("client disconnected")
)

// startCmdCtx makes the running command's context (see above).
// REQUIRES: called by the connection's goroutine; cn.cmdCtx == nil.
func (cn *conn) startCmdCtx() {
	ctx, cancel := context.WithCancelCause(cn.ctx)
	cn.cmdCancel = cancel
	if t := cn.srv.cfg.BusyTimeout; t > 0 {
		ctx, cn.cmdStopTimer = context.WithDeadlineCause(ctx, cn.srv.start.Add(cn.cmdStart+t), errBusyTimeout)
	}
	cn.cmdCtx = ctx
	if !cn.peerChecked {
		cn.peerChecked = true
		cn.peer = rawConnOf(cn.nc)
	}
	if rc := cn.peer; rc != nil && peerWatchSupported {
		cn.cmdWatch = time.AfterFunc(peerWatchEvery, func() { watchPeer(ctx, rc, cancel) })
	}
}

// endCmdCtx ends the command's context, if it was made.
// REQUIRES: called by the connection's goroutine.
func (cn *conn) endCmdCtx() {
	if cn.cmdCtx == nil {
		return
	}
	if cn.cmdWatch != nil {
		cn.cmdWatch.Stop()
		cn.cmdWatch = nil
	}
	if cn.cmdStopTimer != nil {
		cn.cmdStopTimer()
		cn.cmdStopTimer = nil
	}
	cn.cmdCancel(nil)
	cn.cmdCtx, cn.cmdCancel = nil, nil
}

// watchPeer looks for the client's hang-up every peerWatchEvery until ctx
// ends, and cancels ctx when it sees one.
func watchPeer(ctx context.Context, rc syscall.RawConn, cancel context.CancelCauseFunc) {
	t := time.NewTicker(peerWatchEvery)
	defer t.Stop()
	for {
		if ctx.Err() != nil {
			return
		}
		if peerGone(rc) {
			cancel(errClientGone)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// rawConnOf returns nc's socket, looking through TLS and other wrappers
// that expose the connection they wrap (NetConn), or nil.
func rawConnOf(nc net.Conn) syscall.RawConn {
	for range 4 {
		if sc, ok := nc.(syscall.Conn); ok {
			rc, err := sc.SyscallConn()
			if err != nil {
				return nil
			}
			return rc
		}
		w, ok := nc.(interface{ NetConn() net.Conn })
		if !ok {
			return nil
		}
		nc = w.NetConn()
	}
	return nil
}

// busyErr maps a handler's error that is its context's end to the reply
// described above; any other error is returned as it is.
// REQUIRES: called by the connection's goroutine.
func (cn *conn) busyErr(err error) error {
	ctx := cn.cmdCtx
	if ctx == nil || ctx.Err() == nil ||
		!(errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
		return err
	}
	switch context.Cause(ctx) {
	case errBusyTimeout:
		ms := strconv.FormatInt(cn.srv.cfg.BusyTimeout.Milliseconds(), 10)
		return &ReplyError{Code: "TIMEOUT", Msg: "the command ran past busy-timeout (" + ms +
			" ms) and was stopped; narrow it (a tighter FILTER, a smaller LIMIT) or raise busy-timeout"}
	case errClientGone:
		return NewError("command cancelled: the client disconnected")
	}
	return NewError("command cancelled: the server is shutting down")
}
