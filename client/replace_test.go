package client_test

import (
	"testing"

	"github.com/memrl/memrl/client"
)

// TestSetVectorAndReplace: SetVector and AddOptions.Replace overwrite a
// memory in place, keeping its id, Q and visits.
func TestSetVectorAndReplace(t *testing.T) {
	c := newClient(t, "")
	name := pool(t, c) // COSINE, dim 2; k2 has Q 1
	if _, err := c.Reward(ctx, name, 1, client.Key("k2")); err != nil {
		t.Fatal(err)
	}
	before, err := c.Get(ctx, name, client.Key("k2"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetVector(ctx, name, client.Key("k2"), []float32{0, 3}); err != nil {
		t.Fatal(err)
	}
	m, err := c.Get(ctx, name, client.Key("k2"), &client.GetOptions{WithVector: true})
	if err != nil || m.ID != before.ID || m.Q != before.Q || m.Visits != 1 || m.Vector[1] != 1 || string(m.Payload) != "p2" {
		t.Fatalf("after SetVector: %+v, %v; before %+v", m, err, before)
	}
	id, err := c.Add(ctx, name, []float32{1, 0}, &client.AddOptions{Key: "k2", Replace: true, Payload: []byte("new")})
	if err != nil || id != before.ID {
		t.Fatalf("Add Replace = %d, %v; want %d", id, err, before.ID)
	}
	m, err = c.Get(ctx, name, client.Key("k2"), &client.GetOptions{WithVector: true})
	if err != nil || m.Q != before.Q || m.Visits != 1 || m.Vector[0] != 1 || string(m.Payload) != "new" || m.Attrs != nil {
		t.Fatalf("after Add Replace: %+v, %v", m, err)
	}
	p := c.Pipeline()
	sv := p.SetVector(ctx, name, client.Key("k1"), []float32{1, 1})
	if err := p.Exec(ctx); err != nil || sv.Err() != nil {
		t.Fatalf("pipelined SetVector: %v %v", err, sv.Err())
	}
	wantIs(t, "SetVector nope", c.SetVector(ctx, name, client.Key("nope"), []float32{1, 0}), client.ErrNoMemory)
	wantIs(t, "SetVector 3-d", c.SetVector(ctx, name, client.Key("k1"), []float32{1, 0, 0}), client.ErrDimension)
}
