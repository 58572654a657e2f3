package server

import (
	"context"
	"math/rand/v2"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSearchGateAlone: a user is alone while no other user has a step
// running (borrowed or not) or waiting, or ended one less than aloneIdle
// ago, whatever its own steps running and waiting; another user's step,
// running or waiting, ends it, and aloneIdle after that step's end the
// user is alone again. The gate's clock is the test's.
func TestSearchGateAlone(t *testing.T) {
	var now time.Duration
	g := &searchGate{slots: 2, clock: func() time.Duration { return now }}
	gateHold(t, g, "A")
	if !g.alone("A") {
		t.Fatal("A with the only step running is not alone")
	}
	gateHold(t, g, "A") // both slots A's
	got := gateOrder(t, g, "A1")
	if !g.alone("A") {
		t.Fatal("A with only its own steps running and waiting is not alone")
	}
	gateHold(t, g, "V") // V borrows
	if g.alone("A") || g.alone("V") {
		t.Fatal("alone with another user's step running")
	}
	g.release("V")
	if g.alone("A") {
		t.Fatal("A alone right after V's step ended")
	}
	now += aloneIdle - 1
	if g.alone("A") {
		t.Fatal("A alone less than aloneIdle after V's step ended")
	}
	now++
	if !g.alone("A") {
		t.Fatal("A not alone aloneIdle after V's step ended")
	}
	gateHold(t, g, "V")
	gotV := gateOrder(t, g, "V1") // V has a step waiting...
	g.release("V")                // ...and none running
	now += aloneIdle
	if g.alone("A") {
		t.Fatal("A alone with V's step waiting")
	}
	g.release("A") // the lowest tag is A1's
	if l := recvLabel(t, got); l != "A1" {
		t.Fatalf("granted %q, want A1", l)
	}
	g.release("A")
	if l := recvLabel(t, gotV); l != "V1" {
		t.Fatalf("granted %q, want V1", l)
	}
	if g.alone("A") || g.alone("V") {
		t.Fatal("alone with two users' steps running")
	}
	g.release("V")
	// A's own steps ending since do not hide V's: the two last users'
	// ends are kept.
	g.release("A")
	gateHold(t, g, "A")
	g.release("A")
	gateHold(t, g, "A")
	if g.alone("A") {
		t.Fatal("A alone less than aloneIdle after V's step ended, A's ended since")
	}
	now += aloneIdle
	if !g.alone("A") {
		t.Fatal("A not alone once V's steps ended aloneIdle ago")
	}
	g.release("A")
	if r, q, u := g.state(); r != 0 || q != 0 || u != 0 {
		t.Fatalf("at the end: running %d, queued %d, users %d; want 0 0 0", r, q, u)
	}
	if off := (&searchGate{slots: searchSlots(-1)}); !off.alone("A") {
		t.Fatal("without admission a user is not alone")
	}
}

// TestMRetrieveStepsAlone: a MEM.MRETRIEVE whose user is alone runs in
// steps of mretrieveAloneK1/K1 queries, 64 at K1 10; with another user's
// step running, or ended less than aloneIdle ago (the gate's clock is the
// test's), in steps of mretrieveAdmitK1/K1, 16; and when another user
// starts searching during the command, its next steps shrink back.
// Each step asks the gate once (its aloneTrace): the steps are counted,
// not timed. The replies do not depend on the steps.
func TestMRetrieveStepsAlone(t *testing.T) {
	var mu sync.Mutex
	var steps []bool
	var onStep func() // run by the hook after recording, outside mu
	var now atomic.Int64
	ts := startFair(t, Config{SearchSlots: 2}, 3000, func(s *Server) {
		s.gate.clock = func() time.Duration { return time.Duration(now.Load()) }
		s.gate.aloneTrace = func(user string, alone bool) {
			if user != "attacker" {
				return
			}
			mu.Lock()
			steps = append(steps, alone)
			f := onStep
			onStep = nil
			mu.Unlock()
			if f != nil {
				f()
			}
		}
	})
	rng := rand.New(rand.NewPCG(9, 10))
	args := []any{"MEM.MRETRIEVE", "f", "K1", 10, "QUERIES", 200}
	for range 200 {
		args = append(args, "FP32", fp32(randVec(rng, 16)...))
	}
	attacker := userClient(t, ts, "attacker")
	run := func(what string, want []bool) []any {
		t.Helper()
		mu.Lock()
		steps = nil
		mu.Unlock()
		res, err := attacker.Do(context.Background(), args...).Slice()
		if err != nil || len(res) != 200 {
			t.Fatalf("%s: %d replies, %v", what, len(res), err)
		}
		mu.Lock()
		defer mu.Unlock()
		if !reflect.DeepEqual(steps, want) {
			t.Fatalf("%s: steps alone %v, want %v", what, steps, want)
		}
		return res
	}
	repeat := func(alone bool, n int) []bool {
		s := make([]bool, n)
		for i := range s {
			s[i] = alone
		}
		return s
	}

	// Alone: 64, 64, 64, 8.
	alone := run("alone", repeat(true, 4))

	// Another user's step holds a slot: 13 steps of 16 (the last 8).
	if !ts.gate.tryAcquire("victim") {
		t.Fatal("the victim's step did not start")
	}
	shared := run("beside another user's step", repeat(false, 13))
	ts.gate.release("victim")
	// Within aloneIdle of the other user's step, still 16 a step.
	run("just after another user's step", repeat(false, 13))
	now.Add(int64(aloneIdle))

	// The other user starts once the first step (alone: 64) is sized:
	// the 136 left go in 9 steps of 16.
	mu.Lock()
	onStep = func() {
		if !ts.gate.tryAcquire("victim") {
			t.Error("the victim's step did not start")
		}
	}
	mu.Unlock()
	joined := run("another user joining", append([]bool{true}, repeat(false, 9)...))
	ts.gate.release("victim")
	now.Add(int64(aloneIdle))
	run("aloneIdle after the other user's step", repeat(true, 4))

	if !reflect.DeepEqual(alone, shared) || !reflect.DeepEqual(alone, joined) {
		t.Fatal("the replies differ with the steps")
	}
	if r, q, _ := ts.gate.state(); r != 0 || q != 0 {
		t.Fatalf("at the end: running %d, queued %d; want 0 0", r, q)
	}
}
