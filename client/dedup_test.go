package client_test

import (
	"testing"

	"github.com/memrl/memrl/client"
)

// TestAddDedup: AddOptions.Dedup and Merge send DEDUP and MERGE.
func TestAddDedup(t *testing.T) {
	c := newClient(t, "")
	name := newColl(t, c, 2, nil) // COSINE
	first, err := c.Add(ctx, name, []float32{1, 0}, &client.AddOptions{Q: ptr(0.2)})
	if err != nil {
		t.Fatal(err)
	}
	id, err := c.Add(ctx, name, []float32{1, 0.001}, &client.AddOptions{Q: ptr(0.6), Dedup: ptr(0.99), Merge: "AVG"})
	if err != nil || id != first {
		t.Fatalf("Add with Dedup = %d, %v; want %d", id, err, first)
	}
	m, err := c.Get(ctx, name, client.ID(first), nil)
	if err != nil || m.Q != 0.4 {
		t.Fatalf("Q after MERGE AVG = %v, %v; want 0.4", m, err)
	}
	if n, _ := c.Count(ctx, name); n != 1 {
		t.Fatalf("%d memories, want 1", n)
	}
}
