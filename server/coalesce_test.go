package server

import (
	"context"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// coalesceIVF creates collection "v" (dimension 8, L2, an IVF-PQ index)
// of 3000 memories as the administrator and waits for its index.
func coalesceIVF(t *testing.T, ts *testServer) {
	t.Helper()
	admin := redis.NewClient(&redis.Options{Addr: ts.addr, Password: "s3cret", MaxRetries: -1})
	defer admin.Close()
	mustDo(t, admin, "MEM.CREATE", "v", "DIM", 8, "METRIC", "L2", "INDEX", "IVFPQ", "NLIST", 8, "PQM", 4, "TRAIN", 512)
	rng := rand.New(rand.NewPCG(11, 12))
	for i := 0; i < 3000; i += 500 {
		args := []any{"MEM.MADD", "v"}
		for range 500 {
			args = append(args, "FP32", fp32(randVec(rng, 8)...))
		}
		ids := mustDo(t, admin, args...).([]any)
		for j := 0; j < len(ids); j += 7 {
			mustDo(t, admin, "MEM.REWARD", "v", rng.Float64(), ids[j])
		}
	}
	for deadline := time.Now().Add(waitBound); ; time.Sleep(10 * time.Millisecond) {
		st := mustDo(t, admin, "MEM.INFO", "v")
		if containsIVF(st) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("index not built: %v", st)
		}
	}
}

// containsIVF reports whether a MEM.INFO reply names the ivfpq index.
func containsIVF(st any) bool {
	switch v := st.(type) {
	case []any:
		for i := 0; i+1 < len(v); i += 2 {
			if s, ok := v[i+1].(string); ok && v[i] == "index" && strings.HasPrefix(s, "ivfpq") {
				return true
			}
		}
	}
	return false
}

// TestMRetrieveCoalesced: MEM.MRETRIEVEs of one user waiting for the one
// search slot, queued in a known order, are searched in engine batches
// of the runs of equal options at the head of the queue (the gate's trace
// counts each step taken), and every reply is exactly that of the same
// command run alone: with different K2/λ/keys between the runs, a
// command with a bad query (a taken one, and one that takes others) gets
// its own error and the others of its batch their results, and a client
// that hangs up once its step is taken breaks no other.
func TestMRetrieveCoalesced(t *testing.T) {
	var taken atomic.Int32
	var onTake func(n int32) // set before the slot is released
	ts := startFair(t, Config{SearchSlots: 1}, 0, func(s *Server) {
		s.gate.trace = func(ev byte, user string) {
			if ev == 'c' {
				if f := onTake; f != nil {
					f(taken.Add(1))
				} else {
					taken.Add(1)
				}
			}
		}
	})
	coalesceIVF(t, ts)

	optA := []any{"K1", 10}
	optB := []any{"K1", 10, "K2", 8, "LAMBDA", 0.2}
	optC := []any{"K1", 10, "K2", 3, "LAMBDA", 0.9, "WITHKEYS", "NPROBE", 3}
	type command struct {
		name string
		args []any
	}
	rng := rand.New(rand.NewPCG(13, 14))
	mk := func(name string, opt []any, bad int) command {
		args := append(append([]any{"MEM.MRETRIEVE", "v"}, opt...), "QUERIES", 20)
		for i := range 20 {
			if i == bad {
				args = append(args, "VALUES", 7, 1, 2, 3, 4, 5, 6, 7) // wrong dimension
				continue
			}
			args = append(args, "FP32", fp32(randVec(rng, 8)...))
		}
		return command{name, args}
	}
	// The queue: A1 takes A2 (bad query 6) and A3; B1 takes B2; A4 (bad
	// query 3) takes A5; C1 takes Chang and C2. Taken 6 in all.
	cmds := []command{
		mk("A1", optA, -1), mk("A2", optA, 5), mk("A3", optA, -1),
		mk("B1", optB, -1), mk("B2", optB, -1),
		mk("A4", optA, 2), mk("A5", optA, -1),
		mk("C1", optC, -1), mk("Chang", optC, -1), mk("C2", optC, -1),
	}
	const hang = 8   // Chang
	const hangAt = 5 // taken fifth

	// Each command alone (nothing waits: no batch is shared).
	solo := userClient(t, ts, "attacker")
	type reply struct {
		v   any
		err string
	}
	want := make([]reply, len(cmds))
	for i, c := range cmds {
		v, err := solo.Do(context.Background(), c.args...).Result()
		want[i].v = v
		if err != nil {
			want[i].err = err.Error()
		}
	}
	if want[1].err == "" || want[5].err == "" || want[0].err != "" {
		t.Fatalf("alone: A1 %q, A2 %q, A4 %q; want A2 and A4 to fail alone", want[0].err, want[1].err, want[5].err)
	}
	if n := taken.Load(); n != 0 {
		t.Fatalf("%d steps taken with no one waiting", n)
	}

	// Hold the slot as the same user (so no step may borrow), queue the
	// commands in order, then let go.
	if !ts.gate.tryAcquire("attacker") {
		t.Fatal("the slot was not free")
	}
	clients := make([]*redis.Client, len(cmds))
	got := make([]reply, len(cmds))
	var wg sync.WaitGroup
	for i, c := range cmds {
		clients[i] = userClient(t, ts, "attacker")
		if err := clients[i].Ping(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := clients[i].Do(context.Background(), c.args...).Result()
			got[i].v = v
			if err != nil {
				got[i].err = err.Error()
			}
		}()
		gateWaitQueued(t, &ts.gate, i+1)
	}
	onTake = func(n int32) {
		if n == hangAt {
			// Under the gate's lock, as the step is taken: the hang-up
			// is seen after.
			clients[hang].Close()
		}
	}
	ts.gate.release("attacker")
	wg.Wait()

	if n := taken.Load(); n != 6 {
		t.Errorf("%d steps taken into others' batches, want 6", n)
	}
	for i, c := range cmds {
		if i == hang {
			continue
		}
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("%s coalesced: %v %q\nalone: %v %q", c.name, got[i].v, got[i].err, want[i].v, want[i].err)
		}
	}
	waitGate(t, &ts.gate, "after the commands", func(r, q int) bool { return r == 0 && q == 0 })
}

// TestSearchGateTake: a step takes only the offers at the head of its
// user's queue that match its own, up to the bound, and none while
// another user has a step waiting; a taken waiter wakes joined, holding
// no slot, and one whose context ends after it was taken leaves the gate
// as it is.
func TestSearchGateTake(t *testing.T) {
	g := &searchGate{slots: 1}
	gateHold(t, g, "A")
	qs := make([][]float32, 10)
	offer := func(k int) *coalesceOffer {
		return &coalesceOffer{key: coalesceKey{k1: k}, queries: qs, done: make(chan struct{})}
	}
	type result struct {
		i      int
		joined bool
		err    error
	}
	res := make(chan result, 8)
	ctxs := make([]context.CancelFunc, 0, 8)
	queue := func(user string, o *coalesceOffer) {
		ctx, cancel := context.WithCancel(context.Background())
		ctxs = append(ctxs, cancel)
		i := len(ctxs) - 1
		_, base, _ := g.state()
		go func() {
			joined, err := g.acquireOffer(ctx, user, o)
			res <- result{i, joined, err}
		}()
		gateWaitQueued(t, g, base+1)
	}
	recv := func() result {
		t.Helper()
		select {
		case r := <-res:
			return r
		case <-time.After(10 * time.Second):
			t.Fatal("no waiter woke in 10 s")
			return result{}
		}
	}
	defer func() {
		for _, c := range ctxs {
			c()
		}
	}()

	// A's queue: 1 1 1 2 1. Taking with key 1, bound 30 queries (own 10):
	// the first two only.
	for _, k := range []int{1, 1, 1, 2, 1} {
		queue("A", offer(k))
	}
	if got := g.take("A", offer(1), 30); len(got) != 2 {
		t.Fatalf("took %d, want 2 (bounded)", len(got))
	}
	for range 2 {
		if r := recv(); !r.joined || r.err != nil || r.i > 1 {
			t.Fatalf("waiter %d: joined %v, %v; want 0 and 1 joined", r.i, r.joined, r.err)
		}
	}
	// Next: the third (key 1), then the fourth (key 2) stops it.
	if got := g.take("A", offer(1), 1000); len(got) != 1 {
		t.Fatalf("took %d, want 1 (up to the first that does not match)", len(got))
	}
	if r := recv(); !r.joined || r.i != 2 {
		t.Fatalf("waiter %d joined %v, want 2", r.i, r.joined)
	}
	// Another user waiting: nothing is taken, though the head matches.
	gateHold(t, g, "B")
	queue("B", offer(2))
	if got := g.take("A", offer(2), 1000); len(got) != 0 {
		t.Fatalf("took %d with another user waiting, want 0", len(got))
	}
	// B's waiter gives up: then A's head (key 2) may be taken, and the
	// key-1 step after it is granted the slot once A's first step and
	// B's (borrowed) end.
	ctxs[5]()
	if r := recv(); r.i != 5 || r.joined || r.err == nil {
		t.Fatalf("waiter %d: joined %v, %v; want 5 cancelled", r.i, r.joined, r.err)
	}
	if got := g.take("A", offer(2), 1000); len(got) != 1 {
		t.Fatalf("took %d, want 1", len(got))
	}
	if r := recv(); !r.joined || r.i != 3 {
		t.Fatalf("waiter %d joined %v, want 3", r.i, r.joined)
	}
	g.release("B") // borrowed: the slot is still A's
	g.release("A")
	if r := recv(); r.joined || r.err != nil || r.i != 4 {
		t.Fatalf("waiter %d: joined %v, %v; want 4 granted", r.i, r.joined, r.err)
	}
	g.release("A")
	if running, queued, users := g.state(); running != 0 || queued != 0 || users != 0 {
		t.Fatalf("at the end: running %d, queued %d, users %d; want 0 0 0", running, queued, users)
	}
}
