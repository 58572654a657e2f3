package server

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestSearchAdmissionWritingTx: a transaction that writes holds its
// collection's lock exclusively while its searches run, so they never wait
// for a slot: a retrieval queued for the slot has let go of its shared
// hold on the collection, and once granted would wait for the
// transaction's lock while the transaction waited for its slot (with
// busy-timeout off, for ever). Here every slot is held and neither user
// may borrow; the transaction's MEM.COUNT … FILTER, MEM.MGET and
// MEM.RETRIEVE run at once, and the queued retrieval after it.
func TestSearchAdmissionWritingTx(t *testing.T) {
	ts := startFair(t, Config{SearchSlots: 1, BusyTimeout: -1}, 100, nil)
	// The test holds the only slot as the administrator's step and
	// another (borrowed) as the victim's, as if from other connections.
	gateHold(t, &ts.gate, DefaultUser, "victim")
	ctx := context.Background()
	q := fp32(randVec(rand.New(rand.NewPCG(13, 14)), 16)...)

	victim := patientClient(t, ts, "victim") // it waits for the test's slot
	vErr := make(chan error, 1)
	go func() { vErr <- victim.Do(ctx, "MEM.RETRIEVE", "f", "FP32", q).Err() }()
	waitGate(t, &ts.gate, "the victim's retrieval queues", func(_, q int) bool { return q == 1 })

	admin := userClient(t, ts, DefaultUser)
	type result struct {
		cmds []redis.Cmder
		err  error
	}
	exec := make(chan result, 1)
	go func() {
		cmds, err := admin.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Do(ctx, "MEM.ADD", "f", "FP32", q)
			p.Do(ctx, "MEM.COUNT", "f", "FILTER", ".g == 1")
			p.Do(ctx, "MEM.MGET", "f", 1, 2)
			p.Do(ctx, "MEM.SCAN", "f", "0", "FILTER", ".g == 1")
			p.Do(ctx, "MEM.RETRIEVE", "f", "FP32", q)
			return nil
		})
		exec <- result{cmds, err}
	}()
	var r result
	select {
	case r = <-exec:
	case <-time.After(30 * time.Second):
		// Give the slots back, as the other connections would: the
		// victim's retrieval is granted one and waits for the
		// transaction's lock.
		ts.gate.release(DefaultUser)
		ts.gate.release("victim")
		t.Fatal("the writing transaction's searches waited for a slot")
	}
	if r.err != nil {
		t.Fatalf("EXEC: %v", r.err)
	}
	for i, c := range r.cmds {
		if err := c.Err(); err != nil {
			t.Fatalf("EXEC element %d (%v): %v", i, c.Args(), err)
		}
	}
	if n, _ := r.cmds[1].(*redis.Cmd).Int64(); n != 0 {
		t.Fatalf("MEM.COUNT FILTER in the transaction: %d, want 0 (no attributes)", n)
	}
	if rows, _ := r.cmds[4].(*redis.Cmd).Slice(); len(rows) != 5 {
		t.Fatalf("MEM.RETRIEVE in the transaction: %d rows, want 5", len(rows))
	}
	if r, qd, _ := ts.gate.state(); r != 2 || qd != 1 {
		t.Fatalf("after the transaction: running %d, queued %d; want 2 (the test's), 1", r, qd)
	}
	ts.gate.release("victim")
	ts.gate.release(DefaultUser) // the slot goes to the victim's retrieval
	if err := <-vErr; err != nil {
		t.Fatalf("the victim's retrieval: %v", err)
	}
	waitGate(t, &ts.gate, "at the end", func(r, q int) bool { return r == 0 && q == 0 })
}
