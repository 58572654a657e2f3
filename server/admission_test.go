package server

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// gateWaitQueued polls until g has want steps waiting (a deadline, not a
// sleep: the waiter's goroutine queues when the scheduler runs it).
func gateWaitQueued(t *testing.T, g *searchGate, want int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, q, _ := g.state(); q == want {
			return
		}
		if time.Now().After(deadline) {
			_, q, _ := g.state()
			t.Fatalf("%d steps waiting after 10 s, want %d", q, want)
		}
	}
}

// gateOrder queues one waiter per label on g (user: the label's first
// letter), in the order given, each queued before the next starts; each
// waiter sends its label on the returned channel once it holds a slot.
func gateOrder(t *testing.T, g *searchGate, labels ...string) <-chan string {
	t.Helper()
	got := make(chan string, len(labels))
	_, base, _ := g.state()
	for i, l := range labels {
		go func() {
			if err := g.acquire(context.Background(), l[:1]); err != nil {
				got <- "error: " + err.Error()
				return
			}
			got <- l
		}()
		gateWaitQueued(t, g, base+i+1)
	}
	return got
}

// recvLabel returns the next label granted, failing after a generous
// deadline.
func recvLabel(t *testing.T, got <-chan string) string {
	t.Helper()
	select {
	case l := <-got:
		return l
	case <-time.After(10 * time.Second):
		t.Fatal("no waiter got the slot in 10 s")
		return ""
	}
}

// gateHold starts one step for each user named, without waiting (the
// first takes a free slot, the others borrow: each has none running).
func gateHold(t *testing.T, g *searchGate, users ...string) {
	t.Helper()
	for _, u := range users {
		if !g.tryAcquire(u) {
			t.Fatalf("tryAcquire(%q) waited", u)
		}
	}
}

// TestSearchGateFairOrder: with the one slot held and users A, B and C
// each running a step (so none may borrow), steps queued in the order
// A1 A2 A3 B1 C1 B2 are served one step a user in turn, A1 B1 C1 A2 B2
// A3, whatever the number each queued; and a user with nothing waiting
// (D) whose step arrives while A has a backlog is served next.
func TestSearchGateFairOrder(t *testing.T) {
	g := &searchGate{slots: 1}
	gateHold(t, g, "X", "A", "B", "C", "D") // X holds the slot; the rest borrow
	if g.tryAcquire("A") {
		t.Fatal("a second step of A started with every slot held")
	}
	got := gateOrder(t, g, "A1", "A2", "A3", "B1", "C1", "B2")
	// Four of the five steps running end: still one running (D's), as
	// many as the slots, so no one is served yet.
	for _, u := range []string{"X", "A", "B", "C"} {
		g.release(u)
	}
	if r, q, _ := g.state(); r != 1 || q != 6 {
		t.Fatalf("running %d, queued %d; want 1 6", r, q)
	}
	var order []string
	last := "D"
	for range 6 {
		g.release(last) // the step served last is over: its slot goes on
		l := recvLabel(t, got)
		order = append(order, l)
		last = l[:1]
	}
	if s := strings.Join(order, " "); s != "A1 B1 C1 A2 B2 A3" {
		t.Fatalf("grant order %s, want A1 B1 C1 A2 B2 A3", s)
	}

	// A3 holds the slot; D starts a step (borrowing), then A queues a
	// backlog, then D queues one more.
	gateHold(t, g, "D")
	got = gateOrder(t, g, "A4", "A5", "A6", "D2")
	g.release("D")
	order = order[:0]
	for range 4 {
		g.release(last)
		l := recvLabel(t, got)
		order = append(order, l)
		last = l[:1]
	}
	if s := strings.Join(order, " "); s != "D2 A4 A5 A6" {
		t.Fatalf("grant order %s, want D2 A4 A5 A6 (a user with nothing waiting first)", s)
	}
	g.release(last)
	if r, q, u := g.state(); r != 0 || q != 0 || u != 0 {
		t.Fatalf("after every release: running %d, queued %d, users %d; want 0 0 0", r, q, u)
	}
	if w := g.waited.Load(); w != 10 {
		t.Fatalf("waited = %d, want 10", w)
	}
}

// TestSearchGateBorrow: a user with no step running starts one at once
// even when every slot is held (it borrows), but only one: its next
// waits; and a borrowed slot ended is not handed on while the steps
// running are still as many as the slots.
func TestSearchGateBorrow(t *testing.T) {
	g := &searchGate{slots: 2}
	gateHold(t, g, "A", "A") // A takes both slots
	if g.tryAcquire("A") {
		t.Fatal("A's third step started")
	}
	gateHold(t, g, "V") // V borrows
	if g.tryAcquire("V") {
		t.Fatal("V's second step started with every slot held")
	}
	got := gateOrder(t, g, "A1")
	g.release("V") // 2 running, 2 slots: A1 still waits
	if r, q, _ := g.state(); r != 2 || q != 1 {
		t.Fatalf("running %d, queued %d; want 2 1", r, q)
	}
	g.release("A")
	if l := recvLabel(t, got); l != "A1" {
		t.Fatalf("granted %q", l)
	}
	g.release("A")
	g.release("A")
	if r, q, _ := g.state(); r != 0 || q != 0 {
		t.Fatalf("running %d, queued %d; want 0 0", r, q)
	}
}

// TestSearchGateNoStarvation: users that each have a single step waiting
// at a time and queue their next as soon as served (three light users)
// do not keep a user with a backlog from its turn: over 40 grants on one
// slot, each user gets one in four.
func TestSearchGateNoStarvation(t *testing.T) {
	g := &searchGate{slots: 1}
	gateHold(t, g, "H", "L1", "L2", "L3") // each runs a step: none borrows
	granted := make(chan string, 64)
	queue := func(user string) {
		go func() {
			if err := g.acquire(context.Background(), user); err != nil {
				granted <- "error: " + err.Error()
				return
			}
			granted <- user
		}()
	}
	// H queues 10 steps, then L1, L2 and L3 one each.
	for range 10 {
		queue("H")
	}
	gateWaitQueued(t, g, 10)
	for _, u := range []string{"L1", "L2", "L3"} {
		queue(u)
	}
	gateWaitQueued(t, g, 13)
	for _, u := range []string{"L1", "L2", "L3", "H"} {
		g.release(u) // the last release serves the first waiter
	}
	counts := map[string]int{}
	for range 40 {
		user := recvLabel(t, granted)
		counts[user]++
		// The served user queues its next step before this one ends, as
		// a client looping back to back would.
		_, q, _ := g.state()
		queue(user)
		gateWaitQueued(t, g, q+1)
		g.release(user)
	}
	if counts["H"] != 10 || counts["L1"] != 10 || counts["L2"] != 10 || counts["L3"] != 10 {
		t.Fatalf("grants by user %v, want 10 each", counts)
	}
}

// TestSearchGateCancel: a wait ended by its context (busy-timeout, the
// client gone) returns the context's error holding nothing and leaves
// the queue; a slot released just as the wait ends is handed on, never
// lost. Many rounds race the release against the cancellation.
func TestSearchGateCancel(t *testing.T) {
	g := &searchGate{slots: 2}
	gateHold(t, g, "A", "A") // A's steps hold both slots: A's next waits
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- g.acquire(ctx, "A") }()
	gateWaitQueued(t, g, 1)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v, want context.Canceled", err)
	}
	if r, q, u := g.state(); r != 2 || q != 0 || u != 0 {
		t.Fatalf("after the cancelled wait: running %d, queued %d, users %d; want 2 0 0", r, q, u)
	}
	// An ended context is refused before queueing.
	if err := g.acquire(ctx, "A"); !errors.Is(err, context.Canceled) {
		t.Fatalf("acquire with an ended context: %v", err)
	}
	// A deadline, as busy-timeout's.
	dctx, dcancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer dcancel()
	if err := g.acquire(dctx, "A"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait past its deadline: %v", err)
	}

	// Race: one of the two holders releases while the waiter's context
	// is cancelled; whether the waiter got the slot or not, nothing leaks.
	for range 500 {
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { errc <- g.acquire(ctx, "A") }()
		gateWaitQueued(t, g, 1)
		go cancel()
		g.release("A")
		if err := <-errc; err == nil {
			g.release("A") // it got the slot: give it back
		}
		if !g.tryAcquire("A") {
			t.Fatal("a slot leaked: none free after the race")
		}
		cancel()
	}
	g.release("A")
	g.release("A")
	if r, q, u := g.state(); r != 0 || q != 0 || u != 0 {
		t.Fatalf("at the end: running %d, queued %d, users %d; want 0 0 0", r, q, u)
	}
	for range 2 {
		if !g.tryAcquire("A") {
			t.Fatal("a slot leaked")
		}
	}
}

// TestSearchGateOff: with no slots (SearchSlots < 0) every step is
// admitted at once.
func TestSearchGateOff(t *testing.T) {
	g := &searchGate{slots: searchSlots(-1)}
	for range 100 {
		if !g.tryAcquire("A") || g.acquire(context.Background(), "A") != nil {
			t.Fatal("a gate without slots refused a step")
		}
	}
	g.release("A")
	if searchSlots(0) < 1 || searchSlots(3) != 3 {
		t.Fatalf("searchSlots(0) = %d, searchSlots(3) = %d", searchSlots(0), searchSlots(3))
	}
}
