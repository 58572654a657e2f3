package server

import (
	"sync/atomic"
	"time"
)

// Throttling of failed authentication.
//
// Without it a client that lacks the password could try 25,000 a second on
// one connection (267,000 pipelined) and 32,000 a second over 50, and the
// connection stayed open after any number of failures. Three brakes now
// apply to a failed AUTH or HELLO ... AUTH; a successful one passes none of
// them, so a flood of wrong passwords does not slow anyone who has the
// right one:
//
//   - A per-connection delay: the answer to the connection's n-th failure
//     is held back AuthFailureDelay × 2^(n-1), at most MaxAuthFailureDelay
//     (100 ms, 200 ms, ... 1.6 s, then 2 s by default).
//   - A per-connection count: after MaxAuthFailures failures (10 by
//     default) the connection is closed once the last one is answered. A
//     success in between does not reset the count: the password of one
//     user (say a read-only one) must not buy more guesses at another's.
//     With the defaults one connection gets 10 guesses in about 13 s.
//   - A server-wide rate: at most AuthFailureRate failures (100 a second
//     by default, after a burst of one second's worth) are answered a
//     second over all connections; a failure beyond it waits its turn.
//     Opening more connections therefore buys no more guesses. The wait is
//     bounded by how many connections can queue (MaxClients / rate).
//
// The answer is held back by the connection's own goroutine after the
// command has returned (conn.serve calls holdAuthAnswer), so it holds no
// lock: not Server.txMu (an EXEC of another client would wait for it, and
// every command behind that EXEC), not the connection's mu (CLIENT LIST).
// Only that connection waits; Shutdown and a forced close end the wait.

// Defaults and bounds of the failed-AUTH brakes (Config fields).
const (
	DefaultAuthFailureDelay = 100 * time.Millisecond
	// MaxAuthFailureDelay caps the per-connection delay, unless
	// Config.AuthFailureDelay itself is larger.
	MaxAuthFailureDelay    = 2 * time.Second
	DefaultMaxAuthFailures = 10
	DefaultAuthFailureRate = 100
)

// authThrottle is a connection's record of its failed authentications.
// Only the connection's goroutine touches it.
type authThrottle struct {
	failures int           // failed AUTHs on this connection, ever
	hold     time.Duration // how long to hold back the answer just buffered
}

// authFailureDelay returns the delay of the n-th failure (n >= 1) on a
// connection: base doubled n-1 times, capped at MaxAuthFailureDelay, or at
// base if that is larger. A base <= 0 means no delay.
func authFailureDelay(base time.Duration, n int) time.Duration {
	if base <= 0 || n <= 0 {
		return 0
	}
	limit := max(base, MaxAuthFailureDelay)
	d := base
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

// authFailed records a failed authentication on the connection: it sets
// how long the answer is held back (holdAuthAnswer) and, at
// MaxAuthFailures, closes the connection after the answer.
// REQUIRES: called by the connection's goroutine.
func (c *conn) authFailed() {
	t := &c.throttle
	cfg := &c.srv.cfg
	t.failures++
	wait := c.srv.authRate.reserve(c.srv.sinceStart())
	t.hold = max(authFailureDelay(cfg.AuthFailureDelay, t.failures), wait)
	if cfg.MaxAuthFailures > 0 && t.failures >= cfg.MaxAuthFailures {
		c.closeAfter = true
	}
}

// holdAuthAnswer waits the hold a failed AUTH set before the connection
// goes on (its answer is still buffered: it is sent when the connection
// next waits for input, or closes). It returns early when the server
// shuts down or the connection is force-closed.
// REQUIRES: called by the connection's goroutine, holding no lock (in
// particular not Server.txMu: conn.exec has returned).
func (c *conn) holdAuthAnswer() {
	d := c.throttle.hold
	c.throttle.hold = 0
	if d <= 0 {
		return
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-c.ctx.Done():
	case <-c.srv.done:
	}
	c.clockValid = false // the next command starts now, not when AUTH ended
}

// authRate spaces failed authentications server-wide (a GCRA: the
// theoretical arrival time of the next failure advances by interval per
// failure, and a failure is answered once it is within a second of it).
// It takes no lock: one compare-and-swap per failure.
type authRate struct {
	interval time.Duration // 1 s / Config.AuthFailureRate; 0: unlimited
	// tat is the theoretical arrival time after the failures reserved
	// so far, in nanoseconds since the server started.
	tat atomic.Int64
}

// authRateBurst is how much unused rate accumulates: one second's worth of
// failures is answered without waiting.
const authRateBurst = time.Second

// reserve takes the next slot for a failure happening at now (a
// sinceStart reading) and returns how long its answer must wait for it.
func (r *authRate) reserve(now time.Duration) time.Duration {
	if r.interval <= 0 {
		return 0
	}
	for {
		tat := r.tat.Load()
		next := max(time.Duration(tat), now) + r.interval
		if r.tat.CompareAndSwap(tat, int64(next)) {
			return max(next-now-authRateBurst, 0)
		}
	}
}
