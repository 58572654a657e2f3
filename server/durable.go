package server

import "time"

// Durable replies for pipelined writes.
//
// A write command's reply acknowledges that its change is durable. Waiting
// for durability inside each handler makes a connection's pipelined writes
// wait for one fsync each, one after another. Instead a handler may log its
// change, write its reply, and hand the server a durability wait with
// Ctx.AfterDurable; the server runs that wait before any byte of the
// connection's buffered replies reaches the socket.
//
// INVARIANT: a reply never leaves the server before the change it
// acknowledges is durable. It is enforced at the one place bytes leave a
// connection, the writer under its Writer (holdWriter.Write): every write
// to the socket first waits for the connection's pending durability token,
// so neither a Flush at the end of a pipeline nor a full buffer mid-way can
// send a reply early.
//
// If that wait fails (the log could not be made durable), the write fails,
// the Writer's error is sticky, and the connection is closed without
// sending the held replies or any later one: its client sees a dropped
// connection, i.e. unacknowledged writes. A command with nothing pipelined
// behind it waits in its handler instead, so that a failure becomes an ERR
// reply and the connection stays usable for reads.

// AfterDurable makes this command's reply (and every reply written after
// it on this connection) wait until wait(token) has returned nil. token
// identifies the change; wait must return once the change and every change
// with a smaller token is durable (engine.DB.WaitDurable). All tokens given
// on one connection must be waited for by the same function (the last
// one given is used).
//
// Inside EXEC it always records the token: the transaction's writes share
// one wait, made before EXEC's reply is sent (tx.go).
//
// If no further command of this connection has been received, it waits at
// once and returns wait's error, which the handler returns (and the client
// gets as an ERR reply) before writing its reply. Otherwise it records the
// token and returns nil: the handler writes its reply, and the server waits
// before that reply is sent, so that one fsync covers a pipeline.
func (c *Ctx) AfterDurable(wait func(token uint64) error, token uint64) error {
	if token == 0 {
		return nil
	}
	cn := c.conn
	if cn.rd.Buffered() == 0 && !cn.inExec && !cn.deferDurable {
		// Not with the transaction lock held: a slow disk must not hold
		// up a transaction (tx.go).
		defer cn.resumeShared(cn.pauseShared())
		return wait(token)
	}
	cn.holdWait = wait
	cn.holdToken = max(cn.holdToken, token)
	return nil
}

// releaseHold runs the pending durability wait, if any. Its failure is
// sticky: the replies buffered behind it must never be sent, so every
// later call fails too.
// REQUIRES: called by the connection's goroutine.
func (cn *conn) releaseHold() error {
	if cn.holdErr != nil || cn.holdToken == 0 {
		return cn.holdErr
	}
	t := cn.holdToken
	cn.holdToken = 0
	if err := cn.holdWait(t); err != nil {
		cn.holdErr = err
		cn.srv.log.Error("server: a held write could not be made durable; closing the connection without its replies",
			"client", cn.id, "err", err)
		return err
	}
	return nil
}

// holdWriter is what a connection's Writer writes to: the socket, behind
// the pending durability wait.
type holdWriter struct{ cn *conn }

func (h holdWriter) Write(p []byte) (int, error) {
	// A handler writing a large reply, or to a slow reader, must not hold
	// up a transaction while it waits (tx.go).
	defer h.cn.resumeShared(h.cn.pauseShared())
	if err := h.cn.releaseHold(); err != nil {
		return 0, err
	}
	t := h.cn.srv.cfg.OutputTimeout
	if t <= 0 {
		return h.cn.nc.Write(p)
	}
	// The deadline bounds a lack of progress, not the whole reply: it is
	// renewed for every chunk, so a slow but steady reader of a large
	// payload is not cut off.
	const chunk = 256 << 10
	var n int
	var err error
	for n < len(p) && err == nil {
		h.cn.nc.SetWriteDeadline(time.Now().Add(t))
		var m int
		m, err = h.cn.nc.Write(p[n:min(len(p), n+chunk)])
		n += m
	}
	if err != nil && isTimeout(err) {
		h.cn.srv.statOutputTimeouts.Add(1)
		h.cn.srv.log.Info("server: client did not read its replies; disconnected", "client", h.cn.id, "addr", h.cn.nc.RemoteAddr())
	}
	return n, err
}
