package replica

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestReplicatedWrites: writes through the leader are on every replica
// with identical memories, Q, visits, times and expiries; a follower
// refuses writes (TRYAGAIN naming the leader) and serves reads.
func TestReplicatedWrites(t *testing.T) {
	nodes := startGroup(t, 3)
	leader := waitLeader(t, nodes)
	ctx := context.Background()
	rdb := leader.client(t)
	do := func(args ...any) any {
		t.Helper()
		v, err := rdb.Do(ctx, args...).Result()
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return v
	}
	do("MEM.CREATE", "k", "DIM", 2, "ALPHA", 0.5)
	for i := 0; i < 20; i++ {
		do("MEM.ADD", "k", "VALUES", 2, 1, float64(i), "PAYLOAD", fmt.Sprintf("p%d", i))
	}
	for i := 1; i <= 20; i += 3 {
		do("MEM.REWARD", "k", 1.5, i)
	}
	do("MEM.EXPIRE", "k", 2, 1000)
	do("MEM.SETATTR", "k", 3, `{"a":1}`)
	// A transaction, as one entry.
	if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "MEM.ADD", "k", "VALUES", 2, 5, 5, "ID", 100)
		p.Do(ctx, "MEM.REWARD", "k", 1, 100)
		p.Do(ctx, "MEM.DEL", "k", 100)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// Validation errors are deterministic: same error everywhere, no change.
	if err := rdb.Do(ctx, "MEM.ADD", "k", "VALUES", 3, 1, 2, 3).Err(); err == nil {
		t.Fatal("a wrong dimension was accepted")
	}
	state := sameState(t, leader, nodes)
	if !strings.Contains(state, "q=0.75 v=1") || strings.Count(state, "\n") != 21 {
		t.Fatalf("state:\n%s", state)
	}
	for _, tn := range nodes {
		if tn == leader {
			continue
		}
		f := tn.client(t)
		err := f.Do(ctx, "MEM.ADD", "k", "VALUES", 2, 0, 1).Err()
		if err == nil || !strings.HasPrefix(err.Error(), "TRYAGAIN") || !strings.Contains(err.Error(), leader.id) {
			t.Fatalf("write on follower %s: %v", tn.id, err)
		}
		if n, err := f.Do(ctx, "MEM.COUNT", "k").Int(); err != nil || n != 20 {
			t.Fatalf("read on follower %s: %d %v", tn.id, n, err)
		}
		if id, ok := tn.node.Leader(); !ok || id != leader.id || tn.node.IsLeader() {
			t.Fatalf("%s: Leader() = %q %v", tn.id, id, ok)
		}
	}
	_ = time.Second
}
