package client_test

import (
	"errors"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/memrl/memrl/client"
)

func TestPipeline(t *testing.T) {
	c := newClient(t, "")
	name := newColl(t, c, 2, nil)
	p := c.Pipeline()
	var adds []*client.Cmd[int64]
	for i := range 3 {
		adds = append(adds, p.Add(ctx, name, unit(0.9-0.1*float64(i)), &client.AddOptions{Key: string(rune('a' + i))}))
	}
	rw := p.Reward(ctx, name, 1, client.Key("a"), client.ID(2))
	missing := p.Get(ctx, name, client.ID(99), nil)
	ret := p.Retrieve(ctx, name, []float32{1, 0}, &client.RetrieveOptions{Lambda: ptr(0.0), WithKeys: true})
	info := p.Info(ctx, name)
	if p.Len() != 7 {
		t.Fatalf("Len = %d, want 7", p.Len())
	}
	if _, err := adds[0].Result(); !errors.Is(err, client.ErrNotExecuted) {
		t.Fatalf("Result before Exec: %v, want ErrNotExecuted", err)
	}
	err := p.Exec(ctx)
	wantIs(t, "Exec (its first error is the Get of 99)", err, client.ErrNoMemory)
	for i, a := range adds {
		if id, err := a.Result(); err != nil || id != int64(i+1) {
			t.Fatalf("add %d = %d, %v", i, id, err)
		}
	}
	if qs, err := rw.Result(); err != nil || !slices.Equal(qs, []float64{0.3, 0.3}) {
		t.Fatalf("reward = %v, %v", qs, err)
	}
	wantIs(t, "queued Get 99", missing.Err(), client.ErrNoMemory)
	if m := missing.Val(); m != nil {
		t.Fatalf("Val of a failed Get = %+v, want nil", m)
	}
	if rs := ret.Val(); len(rs) != 3 || rs[0].Key != "a" || rs[0].Q != 0.3 {
		t.Fatalf("retrieve = %+v, %v", rs, ret.Err())
	}
	if in := info.Val(); in == nil || in.Count != 3 {
		t.Fatalf("info = %+v, %v", in, info.Err())
	}
}

// TestPipelineNull: a null reply (attributes of a memory without any) is
// a result, not the pipeline's error.
func TestPipelineNull(t *testing.T) {
	c := newClient(t, "")
	name := newColl(t, c, 2, nil)
	if _, err := c.Add(ctx, name, []float32{1, 0}, nil); err != nil {
		t.Fatal(err)
	}
	for _, tx := range []bool{false, true} {
		p := c.Pipeline()
		if tx {
			p = c.TxPipeline()
		}
		none := p.GetAttr(ctx, name, client.ID(1))
		cnt := p.Count(ctx, name)
		if err := p.Exec(ctx); err != nil {
			t.Fatalf("tx %v: Exec with a null reply: %v", tx, err)
		}
		if a, err := none.Result(); a != nil || err != nil || cnt.Val() != 1 {
			t.Fatalf("tx %v: GetAttr = %v, %v; count %d", tx, a, err, cnt.Val())
		}
		// A real error after the null is still reported.
		p = c.Pipeline()
		p.GetAttr(ctx, name, client.ID(1))
		p.Get(ctx, name, client.ID(99), nil)
		wantIs(t, "Exec with a null then an error", p.Exec(ctx), client.ErrNoMemory)
	}
}

// TestPipelineRefusedBeforeSending: a command the client cannot encode
// makes Exec send nothing, so no part of the pipeline runs.
func TestPipelineRefusedBeforeSending(t *testing.T) {
	c := newClient(t, "")
	name := newColl(t, c, 2, nil)
	p := c.TxPipeline()
	add := p.Add(ctx, name, []float32{1, 0}, nil)
	bad := p.Add(ctx, name, []float32{1, 0}, &client.AddOptions{Attrs: map[string]any{"x": math.Inf(1)}})
	err := p.Exec(ctx)
	var e *client.Error
	if err == nil || errors.As(err, &e) || !errors.Is(bad.Err(), err) {
		t.Fatalf("Exec = %v, bad = %v; want the client's JSON error", err, bad.Err())
	}
	if _, err := add.Result(); err == nil {
		t.Fatal("a command of an unsent pipeline has a result")
	}
	if in, _ := c.Info(ctx, name); in.Count != 0 {
		t.Fatalf("an unsent pipeline added: %+v", in)
	}
	// A fresh pipeline works.
	if err := c.Pipelined(ctx, func(p *client.Pipeline) error {
		p.Add(ctx, name, []float32{1, 0}, &client.AddOptions{TTL: 1500 * time.Millisecond}) // not whole seconds
		return nil
	}); !errors.Is(err, client.ErrBadTTL) {
		t.Fatalf("Pipelined with a TTL of 1.5 s: %v", err)
	}
	if in, _ := c.Info(ctx, name); in.Count != 0 {
		t.Fatalf("an unsent pipeline added: %+v", in)
	}
}

func TestTxPipelined(t *testing.T) {
	c := newClient(t, "")
	name := newColl(t, c, 2, nil)
	if _, err := c.Add(ctx, name, []float32{1, 0}, &client.AddOptions{Key: "task-9", Payload: []byte("old")}); err != nil {
		t.Fatal(err)
	}
	// Replace a memory under its key in one step (docs/PROTOCOL.md).
	var del *client.Cmd[int64]
	var add *client.Cmd[int64]
	var get *client.Cmd[*client.Memory]
	err := c.TxPipelined(ctx, func(p *client.Pipeline) error {
		del = p.Del(ctx, name, client.Key("task-9"))
		add = p.Add(ctx, name, []float32{0, 1}, &client.AddOptions{Key: "task-9", Payload: []byte("new")})
		get = p.Get(ctx, name, client.Key("task-9"), nil)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if del.Val() != 1 || add.Val() != 2 || get.Val() == nil || string(get.Val().Payload) != "new" {
		t.Fatalf("del %d add %d get %+v", del.Val(), add.Val(), get.Val())
	}
	// A command failing at EXEC fails alone (no rollback).
	var ok *client.Cmd[[]float64]
	var bad *client.Cmd[[]float64]
	err = c.TxPipelined(ctx, func(p *client.Pipeline) error {
		bad = p.Reward(ctx, name, 1, client.ID(99))
		ok = p.Reward(ctx, name, 1, client.ID(2))
		return nil
	})
	wantIs(t, "TxPipelined with a reward of 99", err, client.ErrNoMemory)
	wantIs(t, "queued reward of 99", bad.Err(), client.ErrNoMemory)
	if qs, err := ok.Result(); err != nil || len(qs) != 1 {
		t.Fatalf("the other reward = %v, %v", qs, err)
	}
	// A command refused while queuing (too few arguments) aborts all.
	var first *client.Cmd[int64]
	var short *client.Cmd[[]float64]
	err = c.TxPipelined(ctx, func(p *client.Pipeline) error {
		first = p.Add(ctx, name, []float32{1, 1}, nil)
		short = p.Reward(ctx, name, 1) // MEM.REWARD coll r: no memory named
		return nil
	})
	t.Logf("aborted: Exec %v; add %v; reward %v", err, first.Err(), short.Err())
	wantIs(t, "Exec of an aborted transaction", err, client.ErrExecAbort)
	wantIs(t, "the refused command", short.Err(), client.ErrWrongArity)
	wantIs(t, "the add of an aborted transaction", first.Err(), client.ErrExecAbort)
	if in, _ := c.Info(ctx, name); in.Count != 1 {
		t.Fatalf("an aborted transaction changed the collection: %+v", in)
	}
	// WATCH is refused with a typed error.
	err = client.ConvertErrForTest(c.Redis().Watch(ctx, func(*redis.Tx) error { return nil }, "plans"))
	wantIs(t, "WATCH", err, client.ErrWatchUnsupported)
}

// TestConcurrentClients: one Client used by many goroutines.
func TestConcurrentClients(t *testing.T) {
	c := newClient(t, "")
	name := newColl(t, c, 2, nil)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				id, err := c.Add(ctx, name, unit(0.5+0.01*float64(i)), nil)
				if err == nil {
					_, err = c.Reward(ctx, name, float64(g), client.ID(id))
				}
				if err == nil {
					_, err = c.Retrieve(ctx, name, []float32{1, 0}, nil)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n, err := c.Info(ctx, name); err != nil || n.Count != 160 {
		t.Fatalf("Info = %+v, %v; want 160 memories", n, err)
	}
}
