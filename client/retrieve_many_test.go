package client_test

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/memrl/memrl/client"
	"github.com/memrl/memrl/server"
)

// TestRetrieveMany: RetrieveMany returns, query by query, what Retrieve
// returns with the same options (payloads, attributes and keys too),
// alone and queued in a pipeline; a bad query fails the call with the
// *Error naming its position; a batch whose reply passes the server's
// --maxmemory gets ErrOOM; a count out of bounds is refused before
// anything is sent.
func TestRetrieveMany(t *testing.T) {
	c := newClient(t, startTestServer(t, server.Config{MaxMemory: 8 << 20}))
	name := newColl(t, c, 4, &client.CreateOptions{Metric: client.L2})
	rng := rand.New(rand.NewPCG(5, 6))
	vec := func() []float32 {
		return []float32{float32(rng.NormFloat64()), float32(rng.NormFloat64()), float32(rng.NormFloat64()), float32(rng.NormFloat64())}
	}
	var items []client.AddItem
	for i := range 60 {
		items = append(items, client.AddItem{Vector: vec(), AddOptions: client.AddOptions{
			Payload: make([]byte, 64<<10), Attrs: map[string]any{"i": i % 4}, Key: "k" + string(rune('a'+i%26)) + string(rune('a'+i/26))}})
	}
	for i := 0; i < len(items); i += 10 {
		if _, err := c.MAdd(ctx, name, items[i:i+10]); err != nil {
			t.Fatal(err)
		}
	}
	queries := make([][]float32, 25)
	for i := range queries {
		queries[i] = vec()
	}
	lambda := 0.25
	for _, opt := range []*client.RetrieveOptions{
		nil,
		{K1: 15, K2: 6, Lambda: &lambda, WithAttrs: true, WithKeys: true, Filter: ".i != 3"},
		{K2: 2, WithPayload: true},
	} {
		got, err := c.RetrieveMany(ctx, name, queries, opt)
		if err != nil || len(got) != len(queries) {
			t.Fatalf("RetrieveMany(%+v) = %d lists, %v", opt, len(got), err)
		}
		p := c.Pipeline()
		queued := p.RetrieveMany(ctx, name, queries[:3], opt)
		if err := p.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		for i, q := range queries {
			want, err := c.Retrieve(ctx, name, q, opt)
			if err != nil || len(want) == 0 || !reflect.DeepEqual(got[i], want) {
				t.Fatalf("query %d (%+v): RetrieveMany %+v, Retrieve %+v (%v)", i, opt, got[i], want, err)
			}
			if i < 3 && !reflect.DeepEqual(queued.Val()[i], want) {
				t.Fatalf("query %d queued: %+v, want %+v", i, queued.Val()[i], want)
			}
		}
	}

	bad := append([][]float32{vec(), vec()}, []float32{1, 2, 3})
	_, err := c.RetrieveMany(ctx, name, bad, nil)
	wantIs(t, "RetrieveMany with a 3-d query 3", err, client.ErrDimension)
	var e *client.Error
	if !errors.As(err, &e) || e.Query != 3 || e.Memory != 0 {
		t.Fatalf("RetrieveMany error %v: Query = %d, want 3", err, e.Query)
	}
	// 100 queries × 5 payloads of 64 KiB: 32 MiB against an 8 MiB budget.
	many := make([][]float32, 100)
	for i := range many {
		many[i] = vec()
	}
	_, err = c.RetrieveMany(ctx, name, many, &client.RetrieveOptions{WithPayload: true})
	wantIs(t, "RetrieveMany of 32 MiB of payloads", err, client.ErrOOM)
	for _, n := range []int{0, client.MaxRetrieveMany + 1} {
		if _, err := c.RetrieveMany(ctx, name, make([][]float32, n), nil); err == nil {
			t.Fatalf("RetrieveMany of %d queries: no error", n)
		}
	}
	if _, err := c.RetrieveMany(ctx, "nope", queries, nil); !errors.Is(err, client.ErrNoCollection) {
		t.Fatalf("RetrieveMany nope: %v", err)
	}
}
