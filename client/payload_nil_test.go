package client_test

import (
	"testing"

	"github.com/memrl/memrl/client"
)

// TestPayloadNilWhenNone: Result.Payload and Memory.Payload are nil for a
// memory without a payload, as their docs say (the server sends an empty
// bulk string, which used to come back as a non-nil empty slice), and hold
// the bytes of one with a payload.
func TestPayloadNilWhenNone(t *testing.T) {
	c := newClient(t, "")
	name := newColl(t, c, 2, nil)
	with, err := c.Add(ctx, name, []float32{1, 0}, &client.AddOptions{Payload: []byte("p")})
	if err != nil {
		t.Fatal(err)
	}
	without, err := c.Add(ctx, name, []float32{0, 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, id int64, p []byte) {
		t.Helper()
		switch {
		case id == without && p != nil:
			t.Errorf("%s: memory without a payload: Payload %#v, want nil", what, p)
		case id == with && string(p) != "p":
			t.Errorf("%s: memory with payload \"p\": Payload %q", what, p)
		}
	}
	rs, err := c.Retrieve(ctx, name, []float32{1, 1}, &client.RetrieveOptions{K1: 2, K2: 2, WithPayload: true})
	if err != nil || len(rs) != 2 {
		t.Fatalf("Retrieve: %v, %v", rs, err)
	}
	for _, r := range rs {
		check("Retrieve", r.ID, r.Payload)
	}
	for _, id := range []int64{with, without} {
		m, err := c.Get(ctx, name, client.ID(id), nil)
		if err != nil {
			t.Fatal(err)
		}
		check("Get", id, m.Payload)
	}
	ms, err := c.MGet(ctx, name, []client.Ref{client.ID(with), client.ID(without)}, nil)
	if err != nil || len(ms) != 2 {
		t.Fatalf("MGet: %v, %v", ms, err)
	}
	for _, m := range ms {
		check("MGet", m.ID, m.Payload)
	}
}
