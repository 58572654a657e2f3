package client_test

import (
	"testing"
	"time"

	"github.com/memrl/memrl/client"
)

// TestHistory: History returns a memory's rewards newest first, with Q
// after and visits; count limits it; a key names the memory; a memory never
// rewarded has none; an unknown one is ErrNoMemory; the pipeline form too.
func TestHistory(t *testing.T) {
	c := newClient(t, "")
	name := filterPool(t, c) // ids 1-6
	start := time.Now().Add(-time.Second)
	var qs []float64
	for _, r := range []float64{1, -0.5, 0.25} {
		q, err := c.Reward(ctx, name, r, client.ID(3))
		if err != nil {
			t.Fatal(err)
		}
		qs = append(qs, q[0])
	}
	h, err := c.History(ctx, name, client.ID(3), 0)
	if err != nil || len(h) != 3 {
		t.Fatalf("History = %v, %v", h, err)
	}
	for i, e := range h {
		want := client.HistoryEntry{Reward: []float64{0.25, -0.5, 1}[i], Q: qs[2-i], Visits: int64(3 - i)}
		if e.Reward != want.Reward || e.Q != want.Q || e.Visits != want.Visits || e.Time.Before(start) || e.Time.After(time.Now().Add(time.Second)) {
			t.Fatalf("entry %d = %+v, want %+v", i, e, want)
		}
	}
	if h, err := c.History(ctx, name, client.ID(3), 2); err != nil || len(h) != 2 || h[0].Reward != 0.25 {
		t.Fatalf("History count 2 = %v, %v", h, err)
	}
	if h, err := c.History(ctx, name, client.ID(4), 0); err != nil || len(h) != 0 {
		t.Fatalf("never rewarded = %v, %v", h, err)
	}
	_, err = c.History(ctx, name, client.ID(99), 0)
	wantIs(t, "History of 99", err, client.ErrNoMemory)
	_, err = c.History(ctx, name, client.Key("nokey"), 0)
	wantIs(t, "History of KEY nokey", err, client.ErrNoMemory)

	p := c.Pipeline()
	hc := p.History(ctx, name, client.ID(3), 1)
	if err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if h, err := hc.Result(); err != nil || len(h) != 1 || h[0].Visits != 3 {
		t.Fatalf("pipelined History = %v, %v", h, err)
	}
}
