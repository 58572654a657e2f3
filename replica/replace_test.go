package replica

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestReplicatedReplace: MEM.SETVECTOR and MEM.ADD … KEY k REPLACE, alone
// and in a transaction, leave every replica with the leader's memories:
// the same ids, vectors, attributes, payloads, Q and visits.
func TestReplicatedReplace(t *testing.T) {
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
	do("MEM.CREATE", "k", "DIM", 2, "ALPHA", 0.5, "METRIC", "L2")
	do("MEM.ADD", "k", "VALUES", 2, 1, 0, "KEY", "a", "PAYLOAD", "p")
	do("MEM.ADD", "k", "VALUES", 2, 0, 1, "KEY", "b")
	do("MEM.REWARD", "k", 1, "KEY", "a")
	do("MEM.SETVECTOR", "k", "KEY", "a", "VALUES", 2, 3, 3)
	if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "MEM.ADD", "k", "VALUES", 2, 4, 4, "KEY", "b", "REPLACE", "ATTRS", `{"t":1}`)
		p.Do(ctx, "MEM.ADD", "k", "VALUES", 2, 5, 5, "KEY", "c", "REPLACE")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	state := sameState(t, leader, nodes)
	if !strings.Contains(state, `1 q=0.5 v=1`) || !strings.Contains(state, "vec=[3 3]") ||
		!strings.Contains(state, `vec=[4 4] a={"t":1} k="b"`) || strings.Count(state, "\n") != 4 {
		t.Fatalf("state:\n%s", state)
	}
}
