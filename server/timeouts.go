package server

import (
	"errors"
	"net"
	"os"
	"time"
)

// Timeouts.
//
// A connection costs the server a goroutine, buffers and a slot under
// MaxClients, so one that sends nothing, or half a command, must not hold
// them for ever: 10,000 connections each sending half a frame once filled
// MaxClients in 1.3 s and locked everyone out. Every read from a client
// therefore has a deadline, the earliest of:
//
//   - FrameTimeout after a command's frame began arriving, while the rest
//     of it is awaited (a slow sender of one huge command included);
//   - IdleTimeout after the last command, while waiting for the next one;
//   - AuthTimeout after the connection was accepted, until it
//     authenticates (servers with users only).
//
// and every write has OutputTimeout: a client that stops reading its
// replies is disconnected rather than holding a goroutine and the reply it
// blocks on. A connection past a deadline is closed without a reply, as
// Redis closes idle clients.

// Default timeouts; see Config.
const (
	DefaultFrameTimeout  = 30 * time.Second
	DefaultAuthTimeout   = 10 * time.Second
	DefaultOutputTimeout = 60 * time.Second
)

// deadlineReader is what a connection's Reader reads from: the socket,
// with the read deadline set before every read from the state of the
// connection (see above).
type deadlineReader struct{ c *conn }

func (d deadlineReader) Read(p []byte) (int, error) {
	c := d.c
	c.nc.SetReadDeadline(c.readDeadline(time.Now()))
	// Shutdown stores closing and then sets a deadline in the past
	// (interrupt). Checking closing after our own SetReadDeadline means
	// that either interrupt's deadline comes later and wins, or closing is
	// already visible here: the read never outlives a shutdown.
	if c.srv.closing.Load() {
		c.nc.SetReadDeadline(time.Now())
	}
	return c.nc.Read(p)
}

// readDeadline returns the deadline of a read starting at now, or the zero
// time for none.
// REQUIRES: called by the connection's goroutine.
func (c *conn) readDeadline(now time.Time) time.Time {
	cfg := &c.srv.cfg
	var d time.Time
	earliest := func(t time.Time) {
		if d.IsZero() || t.Before(d) {
			d = t
		}
	}
	if c.rd.InCommand() {
		if c.frameStart.IsZero() {
			c.frameStart = now
		}
		if cfg.FrameTimeout > 0 {
			earliest(c.frameStart.Add(cfg.FrameTimeout))
		}
	} else {
		c.frameStart = time.Time{}
		if cfg.IdleTimeout > 0 {
			earliest(now.Add(cfg.IdleTimeout))
		}
	}
	if c.user == nil && cfg.AuthTimeout > 0 {
		earliest(c.created.Add(cfg.AuthTimeout))
	}
	return d
}

// isTimeout reports whether err is a deadline that passed.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}
