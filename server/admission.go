package server

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Fair admission of search work between users.
//
// Why: every search command is bounded on its own (busy-timeout, steps),
// but a user is not. A read-only user with 64 connections, each looping
// on the largest MEM.MRETRIEVE, keeps 64 searches runnable; the Go
// scheduler shares the cores between goroutines, not users, so another
// tenant's single MEM.RETRIEVE waited behind all of them (p99 2.2–2.7 s
// on 100k memories, bench/fairflood; 78–81 ms with the admission).
//
// So a search runs only while it holds one of a fixed number of slots
// (Config.SearchSlots: GOMAXPROCS by default, about one a core). What is
// admitted is one step: a MEM.RETRIEVE, or one step of a MEM.MRETRIEVE
// (commands_mretrieve.go), which gives its slot back between steps. The
// reads that can do as much work without a search are steps too: a
// MEM.COUNT … FILTER and a MEM.SCAN … FILTER page (each may evaluate
// every memory's attributes: one step, bounded by busy-timeout), and a
// MEM.MGET, in steps of at most mgetStepIDs ids (commands_batch.go). A
// get by id, an unfiltered count or scan page stay outside: their work is
// bounded by what they return. A step that finds a slot free and no one
// waiting takes it at once, for one mutex lock and unlock and a map
// look-up (and a clock read when it ends): a server with one busy user
// pays nothing more.
//
// A step's size may depend on who else searches: a MEM.MRETRIEVE step is
// 4× longer while its user is alone (searchGate.alone: no other user's
// step running, waiting or ended in the last aloneIdle), asked once the
// slot is held, so one user's batches keep the engine's batch sharing
// (commands_mretrieve.go, mretrieveAloneK1), and its next step shrinks
// back as soon as another user searches.
//
// A MEM.MRETRIEVE step that waits offers its search, and a step of the
// same user that starts while that user is alone and no other user waits
// may take the offers at the head of the user's queue that search the
// same collection with the same options, running them as one engine
// batch (coalesce.go): those steps are the ones the gate would grant
// next, their tags count as granted, and they hold no slot.
//
// A step whose user has no step running starts at once even when every
// slot is held: it borrows one above the bound. Without that a single
// retrieval would wait for someone else's step to end, and a step is
// never less than one query: one MEM.RETRIEVE K1 10000 on 100k memories
// is ~160 ms of a core (bench/fairflood measured the victim's p50 going
// from 0.17 to 259 ms under such a flood before borrowing). Borrowed, it
// shares the cores by time slices with at most the slots' steps, so its
// latency is about its own work. A user borrows at most one slot at a
// time (its first running step), so steps above the bound are at most one
// per user with a step running, and the configured users bound those,
// besides the steps of transactions that write (see admitSearch), one per
// such transaction running.
//
// Every other step waits, and each freed slot goes straight to a waiter
// (once the steps running are fewer than the slots), chosen between users
// by start-time fair queuing with every step costing one: a waiting step
// gets the tag max(now, the tag after its user's previous waiting step),
// where now is the tag of the step last granted, and the lowest tag is
// served next (ties: the earliest to arrive). So
//
//   - users with steps waiting are served round-robin, one step each: a
//     user with 64 connections gets the same share of the slots as a
//     user with one;
//   - a user with nothing waiting whose step arrives is served next (its
//     tag is now);
//   - idle time banks nothing: a tag never starts below now, so a user
//     back from idle cannot then take every slot for a while.
//
// Within a user, waiting steps are served in arrival order. Users are told
// apart by name (the default user is one); on a server without users
// every client is the default user, and the queue is FIFO.
//
// A wait ends with the command's context (busy.go): at busy-timeout the
// command answers -TIMEOUT having run nothing, and a client that hangs up
// stops waiting. The waiter then leaves its queue (its tag stays taken: a
// user's abandoned wait still counts as its turn), and a slot handed to it
// just as it gave up is handed on, so no slot is ever lost.

// searchGate is the admission of search steps described above. The zero
// value admits everything at once (slots 0); New sets slots.
type searchGate struct {
	slots int // immutable after New; <= 0: no admission

	mu      sync.Mutex // guards the fields below
	running int        // steps running: slots held, borrowed ones included
	queued  int        // waiters, in all users' queues
	now     int64      // the tag of the step last granted
	seq     uint64     // arrivals so far: ties between tags go to the earlier
	// waiting are the users with waiters, in no order.
	// INVARIANT: a user is in waiting (once) iff it has waiters, and
	// len(waiting) > 0 only while running >= slots: a release hands its
	// slot on while the steps running are fewer than the slots, so a
	// waiter never finds one free.
	waiting []*gateUser
	// users are the users that ever searched, by name: a user's running
	// steps and next tag outlive its queue. Names are authenticated
	// users', so it holds at most the configured users.
	users map[string]*gateUser

	waited    atomic.Int64 // steps that had to wait for a slot, ever
	waitNanos atomic.Int64 // the waits of those that got a slot, in all
	cancelled atomic.Int64 // waits ended by the command's context

	// trace, if set (by tests, before Serve), sees under mu each step
	// that starts to wait ('w') and each slot handed to a waiter ('g'),
	// with the user.
	trace func(ev byte, user string)
	// aloneTrace, if set (by tests, before Serve), sees each answer of
	// alone, after mu is released: it may call the gate.
	aloneTrace func(user string, alone bool)
	// lastEnds are the two users whose steps ended last, the latest
	// first, and when. INVARIANT: lastEnds[0].u != lastEnds[1].u unless
	// both are nil.
	lastEnds [2]gateEnd
	// clock, if set (by tests, before Serve), is the gate's time;
	// otherwise the monotonic time since gateEpoch.
	clock func() time.Duration
}

// gateEnd is when a user's last step ended.
type gateEnd struct {
	u  *gateUser
	at time.Duration
}

// gateEpoch is the origin of the gate's clock.
var gateEpoch = time.Now()

// aloneIdle is how long after another user's step ended a user is still
// not alone (see alone): a client looping on retrievals is between two
// of them most of the time it is not in one, and the other user's steps
// sized then would be the long ones; a user that has not searched for
// aloneIdle has gone for now.
const aloneIdle = 50 * time.Millisecond

// timeLocked returns the gate's clock.
// REQUIRES: g.mu held.
func (g *searchGate) timeLocked() time.Duration {
	if g.clock != nil {
		return g.clock()
	}
	return time.Since(gateEpoch)
}

// searchSlots is Config.SearchSlots with its default applied.
func searchSlots(cfg int) int {
	switch {
	case cfg < 0:
		return 0
	case cfg == 0:
		return runtime.GOMAXPROCS(0)
	}
	return cfg
}

// gateUser is one user's steps: those running and those waiting.
type gateUser struct {
	name    string
	running int           // its steps holding a slot (borrowed or not)
	next    int64         // the lowest tag its next waiting step may get
	waiters []*gateWaiter // oldest first; tags increasing
}

// userLocked returns name's entry, made if need be.
// REQUIRES: g.mu held.
func (g *searchGate) userLocked(name string) *gateUser {
	u := g.users[name]
	if u == nil {
		if g.users == nil {
			g.users = make(map[string]*gateUser)
		}
		u = &gateUser{name: name}
		g.users[name] = u
	}
	return u
}

// startLocked reports whether a step of u may start now without waiting
// (a slot free and no one waiting, or u has no step running: it borrows),
// and if so counts it as running.
// REQUIRES: g.mu held.
func (g *searchGate) startLocked(u *gateUser) bool {
	if g.running < g.slots && len(g.waiting) == 0 || u.running == 0 {
		g.running++
		u.running++
		return true
	}
	return false
}

// gateWaiter is one waiting step.
type gateWaiter struct {
	ch  chan struct{} // closed when the slot is handed to it, or it is joined
	tag int64
	seq uint64
	// offer, if not nil, is the step's search, which another step of
	// the same user may take into its engine batch (coalesce.go).
	// Immutable once the waiter is queued.
	offer   *coalesceOffer
	granted bool // guarded by searchGate.mu
	// joined is set, under searchGate.mu, when another step took offer
	// instead of a slot being handed to it: it holds none.
	joined bool
}

// before reports whether w is served before x.
func (w *gateWaiter) before(x *gateWaiter) bool {
	return w.tag < x.tag || w.tag == x.tag && w.seq < x.seq
}

// tryAcquire starts a step of user's if it may start without waiting
// (see startLocked), and reports whether it did. It never blocks.
func (g *searchGate) tryAcquire(user string) bool {
	if g.slots <= 0 {
		return true
	}
	g.mu.Lock()
	ok := g.startLocked(g.userLocked(user))
	g.mu.Unlock()
	return ok
}

// startNow starts a step of user's at once, above the bound if every
// slot is held (see admitSearch); the caller must call release(user).
func (g *searchGate) startNow(user string) {
	if g.slots <= 0 {
		return
	}
	g.mu.Lock()
	u := g.userLocked(user)
	g.running++
	u.running++
	g.mu.Unlock()
}

// acquire takes a slot for a step of user's, waiting its turn if it may
// not start at once (see above), and returns nil once it holds one; the
// caller must then call release(user) exactly once. If ctx ends first it
// returns ctx.Err() holding nothing.
func (g *searchGate) acquire(ctx context.Context, user string) error {
	_, err := g.acquireOffer(ctx, user, nil)
	return err
}

// acquireOffer is acquire for a step that, while it waits, offers its
// search to the steps of the same user that start (coalesce.go): it
// returns joined true, holding no slot, when one of them took offer into
// its batch instead; the caller must then wait for offer.done (or its
// context) and not call release. offer may be nil (acquire).
func (g *searchGate) acquireOffer(ctx context.Context, user string, offer *coalesceOffer) (joined bool, err error) {
	if g.slots <= 0 {
		return false, nil
	}
	g.mu.Lock()
	u := g.userLocked(user)
	if g.startLocked(u) {
		g.mu.Unlock()
		return false, nil
	}
	if err := ctx.Err(); err != nil {
		g.mu.Unlock()
		return false, err
	}
	if len(u.waiters) == 0 {
		g.waiting = append(g.waiting, u)
	}
	w := &gateWaiter{ch: make(chan struct{}), tag: max(g.now, u.next), seq: g.seq, offer: offer}
	g.seq++
	u.next = w.tag + 1
	u.waiters = append(u.waiters, w)
	g.queued++
	if g.trace != nil {
		g.trace('w', user)
	}
	g.mu.Unlock()

	g.waited.Add(1)
	start := time.Now()
	select {
	case <-w.ch:
		g.waitNanos.Add(int64(time.Since(start)))
		// joined was set before ch was closed.
		return w.joined, nil
	case <-ctx.Done():
	}
	g.cancelled.Add(1)
	g.mu.Lock()
	switch {
	case w.granted:
		// The slot came as the wait ended: hand it on.
		g.releaseLocked(u)
	case w.joined:
		// Taken into another step's batch, which holds the slot and
		// runs it anyway: its results are dropped (coalesce.go).
	default:
		g.leaveLocked(u, w)
	}
	g.mu.Unlock()
	return false, ctx.Err()
}

// release ends a step of user's started by tryAcquire or acquire.
func (g *searchGate) release(user string) {
	if g.slots <= 0 {
		return
	}
	g.mu.Lock()
	g.releaseLocked(g.users[user])
	g.mu.Unlock()
}

// releaseLocked ends a running step of u's and, while fewer steps run
// than there are slots, hands a slot to the waiter served next. The
// users with waiters are scanned for the lowest tag: they are at most the
// configured users, and only a server with waiters scans.
// REQUIRES: g.mu held; u has a step running.
func (g *searchGate) releaseLocked(u *gateUser) {
	u.running--
	g.running--
	if e := (gateEnd{u, g.timeLocked()}); g.lastEnds[0].u == u {
		g.lastEnds[0] = e
	} else {
		g.lastEnds = [2]gateEnd{e, g.lastEnds[0]}
	}
	for g.running < g.slots && len(g.waiting) > 0 {
		best := 0
		for i, x := range g.waiting[1:] {
			if x.waiters[0].before(g.waiting[best].waiters[0]) {
				best = i + 1
			}
		}
		x := g.waiting[best]
		w := x.waiters[0]
		x.waiters = slices.Delete(x.waiters, 0, 1)
		if len(x.waiters) == 0 {
			g.waiting = slices.Delete(g.waiting, best, best+1)
		}
		g.queued--
		g.now = max(g.now, w.tag)
		g.running++
		x.running++
		if g.trace != nil {
			g.trace('g', x.name)
		}
		w.granted = true
		close(w.ch)
	}
}

// leaveLocked takes w, not granted, out of u's queue, and u out of
// waiting if that was its last waiter.
// REQUIRES: g.mu held.
func (g *searchGate) leaveLocked(u *gateUser, w *gateWaiter) {
	if i := slices.Index(u.waiters, w); i >= 0 {
		u.waiters = slices.Delete(u.waiters, i, i+1)
	}
	g.queued--
	if len(u.waiters) > 0 {
		return
	}
	if i := slices.Index(g.waiting, u); i >= 0 {
		g.waiting = slices.Delete(g.waiting, i, i+1)
	}
}

// alone reports whether user, holding a slot for a step, is the only
// user searching: no other user's step holds a slot (borrowed or not) or
// waits for one, or ended less than aloneIdle ago. A step may then be
// longer (see mretrieveAloneK1): no other user can be kept waiting by it
// but one that arrives while it runs, and only for that user's second
// step, its first borrowing a slot; and a user that searched lately, its
// next step likely on its way, is not made to share the cores with such
// steps. The answer is a snapshot: the caller sizes its step with it and
// asks again for the next one, so steps shrink back as soon as another
// user searches. With no admission (slots <= 0) every user is alone.
// REQUIRES: user holds a slot (tryAcquire or acquire returned true/nil).
func (g *searchGate) alone(user string) bool {
	if g.slots <= 0 {
		return true
	}
	g.mu.Lock()
	u := g.users[user]
	other := g.lastEnds[0]
	if other.u == u {
		other = g.lastEnds[1]
	}
	ok := u != nil && u.running == g.running &&
		(len(g.waiting) == 0 || len(g.waiting) == 1 && g.waiting[0] == u) &&
		(other.u == nil || g.timeLocked()-other.at >= aloneIdle)
	hook := g.aloneTrace
	g.mu.Unlock()
	if hook != nil {
		hook(user, ok)
	}
	return ok
}

// state returns what INFO shows of the gate now: the slots held, the
// steps waiting, and the users they belong to.
func (g *searchGate) state() (running, queued, users int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.running, g.queued, len(g.waiting)
}

// admitSearch waits for a search slot for the running command's next
// step (see above), the wait bounded by the command's context; on nil the
// caller must call doneSearch once the step's search is over. While it
// waits it lets go of the locks the command holds shared (txlocks.go), as
// a durability wait does, so that a transaction that writes is not held
// up by searches waiting their turn.
//
// A step of a transaction that writes never waits: it starts at once,
// above the bound if every slot is held. Such a transaction holds its
// collections' locks exclusively (or txMu) for its whole length, and a
// step granted a slot takes its shared locks back before it runs
// (resumeShared): had the transaction waited for that slot, each would
// wait for the other until busy-timeout, for ever without one. Only a
// user allowed to write runs such a transaction, and its locks exclude
// every other command on those collections anyway.
// REQUIRES: called by the connection's goroutine, holding no engine lock.
func (c *Ctx) admitSearch() error {
	_, err := c.admitSearchOffer(nil)
	return err
}

// admitSearchOffer is admitSearch for a step that offers its search
// while it waits (searchGate.acquireOffer): joined true means another
// step took it, no slot is held, and doneSearch must not be called.
// offer must be nil inside EXEC (coalesce.go).
func (c *Ctx) admitSearchOffer(offer *coalesceOffer) (joined bool, err error) {
	g := &c.conn.srv.gate
	name := c.conn.searchUser()
	cn := c.conn
	if cn.inExec && !cn.sharedHeld {
		// A transaction that writes: a read-only one runs each command
		// holding its shared locks (lockCmd sets sharedHeld).
		g.startNow(name)
		return false, nil
	}
	if g.tryAcquire(name) {
		return false, nil
	}
	ctx := c.Context()
	defer cn.resumeShared(cn.pauseShared())
	return g.acquireOffer(ctx, name, offer)
}

// doneSearch gives back the slot admitSearch took.
// REQUIRES: the same command as admitSearch (the user has not changed).
func (c *Ctx) doneSearch() { c.conn.srv.gate.release(c.conn.searchUser()) }

// searchUser is the name the connection's searches are admitted under.
// REQUIRES: called by the connection's goroutine.
func (cn *conn) searchUser() string {
	if cn.user == nil {
		return ""
	}
	return cn.user.Name
}

// admitted runs search, one search step, holding a search slot
// (admitSearch) and gives the slot back however search ends: a panic
// closes only the connection (conn.run), and must not take a slot with it.
func admitted[T any](c *Ctx, search func() (T, error)) (T, error) {
	if err := c.admitSearch(); err != nil {
		var zero T
		return zero, err
	}
	defer c.doneSearch()
	return search()
}
