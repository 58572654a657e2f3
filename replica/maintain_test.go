package replica

import (
	"context"
	"testing"
	"time"
)

// TestExpiryIsReplicated: memories expire on every replica through the
// leader's RAFT.MAINTAIN entries (no replica sweeps on its own), at the
// same time, leaving identical states.
func TestExpiryIsReplicated(t *testing.T) {
	nodes := startGroup(t, 3)
	leader := waitLeader(t, nodes)
	ctx := context.Background()
	rdb := leader.client(t)
	if err := rdb.Do(ctx, "MEM.CREATE", "k", "DIM", 2).Err(); err != nil {
		t.Fatal(err)
	}
	fill(t, leader, 1, 10)
	for _, id := range []int{2, 5, 7} {
		if err := rdb.Do(ctx, "MEM.EXPIRE", "k", id, 1).Err(); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(1100 * time.Millisecond)
	deadline := time.Now().Add(20 * time.Second)
	for {
		// Reads hide an expired memory at once; its row is dead only
		// once the delete is applied.
		waitCaughtUp(t, leader, nodes)
		deleted := true
		for _, tn := range nodes {
			c, err := tn.node.DB().Collection("k")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Get(5); err == nil {
				t.Fatalf("%s: expired memory still readable", tn.id)
			}
			st, err := c.Stats()
			if err != nil {
				t.Fatal(err)
			}
			deleted = deleted && st.DeadRows == 3 && st.Memories == 7
		}
		if deleted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("expired memories were not deleted on every replica")
		}
		time.Sleep(100 * time.Millisecond)
	}
	sameState(t, leader, nodes)
}
