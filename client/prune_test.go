package client_test

import (
	"errors"
	"testing"

	"github.com/memrl/memrl/client"
)

// TestPrune: Prune sends MEM.PRUNE's criteria; DryRun counts without
// deleting; a prune without a criterion is refused and deletes nothing.
func TestPrune(t *testing.T) {
	c := newClient(t, "")
	name := filterPool(t, c) // 6 memories (ids 1-6), users u1 (odd ids) and u2, Q at QINIT 0
	if _, err := c.Reward(ctx, name, 1, client.ID(1), client.ID(2)); err != nil {
		t.Fatal(err)
	}
	n, err := c.Prune(ctx, name, client.PruneOptions{QBelow: ptr(0.01), Filter: `.user == "u1"`, DryRun: true})
	if err != nil || n != 2 {
		t.Fatalf("Prune DryRun = %d, %v; want 2 (u1's unrewarded memories)", n, err)
	}
	if left, _ := c.Count(ctx, name); left != 6 {
		t.Fatalf("a dry run deleted: %d left", left)
	}
	if n, err := c.Prune(ctx, name, client.PruneOptions{MaxCount: ptr(int64(2))}); err != nil || n != 4 {
		t.Fatalf("Prune MaxCount 2 = %d, %v; want 4", n, err)
	}
	rest, err := c.MGet(ctx, name, []client.Ref{client.ID(1), client.ID(2)}, nil)
	if err != nil || rest[0] == nil || rest[1] == nil {
		t.Fatalf("MaxCount kept %v, %v; want the two rewarded memories", rest, err)
	}
	_, err = c.Prune(ctx, name, client.PruneOptions{Filter: `.user == "u1"`})
	var ce *client.Error
	if !errors.As(err, &ce) {
		t.Fatalf("Prune without a criterion: %v, want a server error", err)
	}
	if left, _ := c.Count(ctx, name); left != 2 {
		t.Fatalf("a refused prune deleted: %d left", left)
	}
}
