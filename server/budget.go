package server

import (
	"runtime/debug"
	"sync/atomic"
	"time"
)

// Client memory.
//
// What a client sends is buffered whole before its command runs, and a
// reply with payloads is held while it is written. Per-request limits
// (Limits) bound one client; MaxMemory bounds all of them together: 40
// connections each declaring a 60 MB bulk and sending 50 MB took the
// server to 3.56 GB before. Every byte a Reader holds beyond its fixed
// input buffer, and every payload a reply holds while it is written, is
// reserved from the server's Budget first; a reservation past the limit
// fails, the request is refused with "-OOM" and, for a request still being
// read, the connection is closed (its stream cannot be resynchronised).
//
// Go returns freed heap to the operating system lazily (minutes later, in
// the background), so a burst of large requests left the server at 2.98 GB
// five minutes after its clients had gone. When at least returnAfter bytes
// of client buffers have been released, the Budget hands the memory back at
// once (debug.FreeOSMemory), at most once per returnEvery.

// Budget is a limit on bytes shared by every connection of a server.
// It is safe for concurrent use.
type Budget struct {
	limit int64 // <= 0 means unlimited

	used       atomic.Int64 // bytes reserved now
	peak       atomic.Int64 // highest used seen
	refused    atomic.Int64 // reservations refused
	freed      atomic.Int64 // bytes released since memory was last returned to the OS
	lastReturn atomic.Int64 // unix nanoseconds of the last return
	pending    atomic.Bool  // a return is scheduled for when returnEvery has passed
	returns    atomic.Int64 // times memory was returned to the OS
}

const (
	returnAfter = 64 << 20
	returnEvery = time.Second
)

// errClientMemory is the reply to a request refused by the Budget.
var errClientMemory = &ReplyError{Code: "OOM", Msg: "command not allowed: client buffers would exceed 'maxmemory'"}

// Reserve takes n bytes from the budget and reports whether it could.
func (b *Budget) Reserve(n int64) bool {
	if n <= 0 {
		return true
	}
	for {
		used := b.used.Load()
		if b.limit > 0 && used+n > b.limit {
			b.refused.Add(1)
			return false
		}
		if b.used.CompareAndSwap(used, used+n) {
			for p := b.peak.Load(); used+n > p && !b.peak.CompareAndSwap(p, used+n); p = b.peak.Load() {
			}
			return true
		}
	}
}

// Release gives back n bytes taken by Reserve.
func (b *Budget) Release(n int64) {
	if n <= 0 {
		return
	}
	b.used.Add(-n)
	// Only large bursts: a forced collection a second would tax a server
	// whose clients simply send payloads of a few hundred kilobytes.
	if b.freed.Add(n) >= max(returnAfter, b.limit/4) {
		b.returnMemory()
	}
}

// returnMemory hands freed memory back to the operating system now, or,
// if it did so less than returnEvery ago, once returnEvery has passed: the
// last clients of a burst must not leave their memory behind because an
// earlier return was too recent.
func (b *Budget) returnMemory() {
	now := time.Now().UnixNano()
	last := b.lastReturn.Load()
	if wait := time.Duration(last + int64(returnEvery) - now); wait > 0 {
		if b.pending.CompareAndSwap(false, true) {
			time.AfterFunc(wait, func() {
				b.pending.Store(false)
				b.returnMemory()
			})
		}
		return
	}
	if !b.lastReturn.CompareAndSwap(last, now) {
		return // another goroutine is returning it
	}
	b.freed.Store(0)
	b.returns.Add(1)
	go debug.FreeOSMemory()
}

// Used returns the bytes reserved now.
func (b *Budget) Used() int64 { return b.used.Load() }

// Peak returns the most bytes reserved at once.
func (b *Budget) Peak() int64 { return b.peak.Load() }

// Refused returns how many reservations failed.
func (b *Budget) Refused() int64 { return b.refused.Load() }

// Limit returns the budget's limit; <= 0 means unlimited.
func (b *Budget) Limit() int64 { return b.limit }

// ClientMemory returns the server's client-memory budget, for monitoring
// and for a process-wide heap limit (see memrl serve's heap governor).
func (s *Server) ClientMemory() *Budget { return &s.budget }
