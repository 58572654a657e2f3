package server

import (
	"context"
	"fmt"
	"net"
)

// Ctx is what a handler gets besides its arguments: the reply Writer
// (embedded, so c.WriteInt(1) works), the connection's identity, and a
// context.Context.
//
// One Ctx exists per connection and is reused for each of its commands. It
// must not be used after the handler returns, nor from other goroutines.
type Ctx struct {
	*Writer
	conn *conn
	cmd  *command // the command being executed
}

// Context returns the running command's context (busy.go): it ends when
// the command has run for busy-timeout (Config.BusyTimeout), when the
// client disconnects while it runs, and when the server ends the
// connection (Shutdown giving up waiting for in-flight commands). Long
// handlers should honour it and return its error, which the server turns
// into a -TIMEOUT reply (or an -ERR for a client gone). Inside EXEC every
// queued command gets the EXEC's context. It must not be kept past the
// handler's return.
func (c *Ctx) Context() context.Context {
	if c.conn.cmdCtx == nil {
		c.conn.startCmdCtx()
	}
	return c.conn.cmdCtx
}

// Name returns the lower-case name of the command being executed.
func (c *Ctx) Name() string { return c.cmd.name }

// ClientID returns the connection's unique, increasing id (CLIENT ID).
func (c *Ctx) ClientID() int64 { return c.conn.id }

// ClientName returns the name set with CLIENT SETNAME or HELLO SETNAME, or
// "".
func (c *Ctx) ClientName() string { return c.conn.clientName() }

// RemoteAddr returns the client's address.
func (c *Ctx) RemoteAddr() net.Addr { return c.conn.nc.RemoteAddr() }

// Server returns the server running the command.
func (c *Ctx) Server() *Server { return c.conn.srv }

// CloseAfterReply makes the server flush the replies written so far and
// close the connection once the handler returns (QUIT uses it).
func (c *Ctx) CloseAfterReply() { c.conn.closeAfter = true }

// WrongArity returns the standard "wrong number of arguments" error for the
// current command, for handlers that check a maximum argument count.
func (c *Ctx) WrongArity() error { return errWrongArity(c.cmd.name) }

// ReserveMemory takes n bytes from the server's client-memory budget
// (Config.MaxMemory) for something the handler holds while it replies, such
// as a payload. It returns a function that gives them back, which the
// handler must call before it returns, or an "-OOM" error to return
// without replying.
func (c *Ctx) ReserveMemory(n int64) (release func(), err error) {
	b := &c.conn.srv.budget
	if !b.Reserve(n) {
		return nil, errClientMemory
	}
	return func() { b.Release(n) }, nil
}

// CheckReplySize returns an error if a reply of n bytes would exceed
// Config.MaxReplyBytes, for handlers that know their reply's size before
// writing it.
func (c *Ctx) CheckReplySize(n int64) error {
	if lim := c.conn.srv.cfg.MaxReplyBytes; lim > 0 && n > lim {
		return NewError(fmt.Sprintf("the reply would be %d bytes, more than the limit of %d (max-reply-bytes); ask for fewer memories or without payloads", n, lim))
	}
	return nil
}
