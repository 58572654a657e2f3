package client_test

import (
	"slices"
	"testing"

	"github.com/memrl/memrl/client"
)

// TestRetrieveRawQ: RetrieveOptions.RawQ sends RAWQ, which ranks phase 2
// by (1-λ)·z(sim) + λ·Q instead of z-scoring Q. On the pool at λ = 0.6:
// z-scored, scores -.006 .360 -.722 .368 → 4 2 1 3; raw,
// .537 .779 -.179 .663 → 2 4 1 3.
func TestRetrieveRawQ(t *testing.T) {
	c := newClient(t, "")
	name := pool(t, c)
	q := []float32{1, 0}
	rs, err := c.Retrieve(ctx, name, q, &client.RetrieveOptions{K1: 4, K2: 4, Lambda: ptr(0.6)})
	if err != nil || !slices.Equal(ids(rs), []int64{4, 2, 1, 3}) {
		t.Fatalf("Retrieve LAMBDA 0.6 = %+v, %v", rs, err)
	}
	rs, err = c.Retrieve(ctx, name, q, &client.RetrieveOptions{K1: 4, K2: 4, Lambda: ptr(0.6), RawQ: true})
	if err != nil || !slices.Equal(ids(rs), []int64{2, 4, 1, 3}) {
		t.Fatalf("Retrieve LAMBDA 0.6 RAWQ = %+v, %v", rs, err)
	}
}
