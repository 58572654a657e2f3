package server

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestSearchFairUnderReadFlood: the reads that can do a search's work
// without one, MEM.COUNT … FILTER, MEM.SCAN … FILTER and MEM.MGET of many
// ids, are admitted as searches are. A read-only user floods each from 16
// connections while the test holds the only slot as a third user's step:
// the flooder runs one step at a time (it borrows a slot for its first)
// and the other 15 wait their turn, while another user's MEM.RETRIEVEs
// all answer without waiting. Given the slot back, the flood's waiters are
// served, and the victim's retrievals still never wait. Counted by the
// gate's state and trace, not timed.
func TestSearchFairUnderReadFlood(t *testing.T) {
	ids := make([]any, 0, 1000)
	for i := range 1000 {
		ids = append(ids, i+1)
	}
	for _, tc := range []struct {
		name string
		args []any
		ok   func(reply any) bool
	}{
		{"MEM.COUNT FILTER", []any{"MEM.COUNT", "f", "FILTER", `.g == 1 or .h > 2`},
			func(r any) bool { _, ok := r.(int64); return ok }},
		{"MEM.SCAN FILTER", []any{"MEM.SCAN", "f", "0", "COUNT", 100, "FILTER", `.g == 1 or .h > 2`},
			func(r any) bool { s, ok := r.([]any); return ok && len(s) == 2 }},
		{"MEM.MGET", append([]any{"MEM.MGET", "f"}, ids...),
			func(r any) bool { s, ok := r.([]any); return ok && len(s) == len(ids) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			count := map[string]int{}
			ts := startFair(t, Config{SearchSlots: 1, BusyTimeout: time.Minute}, 3000, func(s *Server) {
				s.gate.trace = func(ev byte, user string) {
					mu.Lock()
					count[string(ev)+user]++
					mu.Unlock()
				}
			})
			if !ts.gate.tryAcquire("holder") {
				t.Fatal("the slot is taken")
			}
			ctx, stop := context.WithCancel(context.Background())
			defer stop()
			var wg sync.WaitGroup
			floodErr := make(chan error, 16)
			for range 16 {
				// Its commands wait while the test holds the slot: a
				// read timeout well past any loaded machine's wait.
				a := patientClient(t, ts, "attacker")
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < 1000 && ctx.Err() == nil; i++ {
						r, err := a.Do(context.Background(), tc.args...).Result()
						if err != nil || !tc.ok(r) {
							floodErr <- fmt.Errorf("%s: %v %v", tc.name, r, err)
							return
						}
					}
				}()
			}
			// The flooder runs a step at a time (borrowed: one
			// connection's, one after another), the 15 others wait.
			waitGate(t, &ts.gate, "the flood queues", func(_, q int) bool { return q == 15 })

			victim := userClient(t, ts, "victim")
			rng := rand.New(rand.NewPCG(11, 12))
			retrieve := func(phase string) {
				for i := range 20 {
					res, err := victim.Do(context.Background(), "MEM.RETRIEVE", "f", "FP32", fp32(randVec(rng, 16)...)).Slice()
					if err != nil || len(res) != 5 {
						t.Fatalf("victim's retrieval %d %s: %d rows, %v", i, phase, len(res), err)
					}
				}
			}
			retrieve("while the flood waits")
			if _, q, _ := ts.gate.state(); q != 15 {
				t.Fatalf("%d flood steps waiting after the victim's retrievals, want 15", q)
			}
			ts.gate.release("holder")
			// The slot given back, the waiters are served in turn.
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(2 * time.Millisecond) {
				mu.Lock()
				g := count["gattacker"]
				mu.Unlock()
				if g >= 30 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d flood steps granted from the queue in 30 s", g)
				}
			}
			retrieve("during the flood")
			stop()
			wg.Wait()
			close(floodErr)
			for err := range floodErr {
				t.Error(err)
			}
			waitGate(t, &ts.gate, "after the flood", func(r, q int) bool { return r == 0 && q == 0 })
			mu.Lock()
			defer mu.Unlock()
			if count["wvictim"] != 0 {
				t.Fatalf("the victim waited %d times for a slot, want never", count["wvictim"])
			}
			t.Logf("flooder: %d steps waited, %d granted from the queue", count["wattacker"], count["gattacker"])
		})
	}
}

// TestMGetSteps: MEM.MGET of more ids than a step reads, and of more
// bytes, replies as MEM.GET does id by id, nulls in place; the steps end
// at mgetStepIDs memories or once they hold mgetStepBytes, never empty.
func TestMGetSteps(t *testing.T) {
	ts := startFair(t, Config{}, 700, nil)
	admin := userClient(t, ts, DefaultUser)
	ctx := context.Background()
	// Large payloads on some memories, so that steps end by bytes too.
	big := strings.Repeat("p", 300<<10)
	for _, id := range []int{3, 4, 5, 6, 7, 400} {
		mustDo(t, admin, "MEM.SETPAYLOAD", "f", id, big)
	}
	args := []any{"MEM.MGET", "f"}
	var want []any
	for i := range 760 {
		id := i + 1
		if i%7 == 3 {
			id = 100000 + i // no such memory
		}
		args = append(args, id)
		r, err := admin.Do(ctx, "MEM.GET", "f", id).Result()
		if err != nil {
			if !strings.HasPrefix(err.Error(), "ERR no such memory") {
				t.Fatalf("MEM.GET %d: %v", id, err)
			}
			r = nil // MEM.MGET's null
		}
		want = append(want, r)
	}
	got, err := admin.Do(ctx, args...).Slice()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("MEM.MGET of 760 differs from MEM.GET id by id")
	}

	const vec = 64
	for _, c := range []struct {
		sizes      []int64
		start, end int
	}{
		{[]int64{10, -1, 10}, 0, 3},
		{make([]int64, 600), 0, mgetStepIDs},
		{make([]int64, 600), 512, 600},
		{[]int64{mgetStepBytes, 1, 1}, 0, 1},
		{[]int64{1, mgetStepBytes * 2, 1}, 0, 2},
		{[]int64{1, mgetStepBytes * 2, 1}, 1, 2},
		{[]int64{mgetStepBytes - vec - 10, 5, 5}, 0, 2},
	} {
		if end := mgetStepEnd(c.sizes, c.start, vec); end != c.end {
			t.Errorf("mgetStepEnd(%v…, %d) = %d, want %d", c.sizes[:min(3, len(c.sizes))], c.start, end, c.end)
		}
	}
}

// patientClient is userClient with a one-minute read timeout, for
// commands that wait for a slot the test holds.
func patientClient(t *testing.T, ts *testServer, name string) *redis.Client {
	t.Helper()
	for _, u := range fairUsers {
		if u.Name == name {
			c := redis.NewClient(&redis.Options{Addr: ts.addr, Username: u.Name, Password: u.Password,
				MaxRetries: -1, PoolSize: 1, ReadTimeout: time.Minute})
			t.Cleanup(func() { c.Close() })
			return c
		}
	}
	t.Fatalf("no user %q", name)
	return nil
}
