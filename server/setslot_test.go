package server

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/memrl/memrl/cluster"
	"github.com/redis/go-redis/v9"
)

// nameInSlot returns a collection name other than not whose slot is slot.
func nameInSlot(slot int, not string) string {
	for j := 0; ; j++ {
		name := fmt.Sprintf("mv-%d", j)
		if name != not && cluster.HashSlot([]byte(name)) == slot {
			return name
		}
	}
}

// wantRedirect fails unless err's text is want.
func wantRedirect(t *testing.T, what string, err error, want string) {
	t.Helper()
	if err == nil || err.Error() != want {
		t.Fatalf("%s: %v, want %s", what, err, want)
	}
}

// TestClusterSetSlotAskAsking walks a slot through a migration as
// docs/CLUSTER.md "Resharding" describes it: MIGRATING on the source,
// IMPORTING on the target; the source serves the collections it has and
// answers -ASK for the others; the target serves a command only after
// ASKING (one command), MOVED otherwise; SETSLOT NODE on both makes the
// target the owner. Bad requests are refused and change nothing.
func TestClusterSetSlotAskAsking(t *testing.T) {
	tc := startTestCluster(t, 0, 1)
	ctx := context.Background()
	c0, c1 := tc.client(t, "n0"), tc.client(t, "n1")
	have := nameInShard(0, 2, 7)
	slot := cluster.HashSlot([]byte(have))
	moving := nameInSlot(slot, have)
	if err := c0.Do(ctx, "MEM.CREATE", have, "DIM", 2).Err(); err != nil {
		t.Fatal(err)
	}

	// Refusals: nothing changes.
	for _, tt := range []struct {
		c    *redis.Client
		args []any
		want string
	}{
		{c1, []any{"CLUSTER", "SETSLOT", slot, "MIGRATING", 0}, fmt.Sprintf("ERR I'm not the owner of hash slot %d (shard 0 is)", slot)},
		{c0, []any{"CLUSTER", "SETSLOT", slot, "IMPORTING", 1}, fmt.Sprintf("ERR I'm already the owner of hash slot %d", slot)},
		{c0, []any{"CLUSTER", "SETSLOT", slot, "MIGRATING", 0}, "ERR Target shard 0 is this shard"},
		{c0, []any{"CLUSTER", "SETSLOT", slot, "MIGRATING", 2}, "ERR Unknown shard 2 (the nodes file names 2)"},
		{c0, []any{"CLUSTER", "SETSLOT", 16384, "STABLE"}, "ERR Invalid or out of range slot"},
		{c0, []any{"CLUSTER", "SETSLOT", slot, "MOVING", 1}, errSetSlotSyntax.Error()},
		{c0, []any{"CLUSTER", "SETSLOT", slot, "STABLE", 1}, errSetSlotSyntax.Error()},
		{c0, []any{"CLUSTER", "SETSLOT", slot, "NODE"}, errSetSlotSyntax.Error()},
		{c0, []any{"CLUSTER", "SETSLOT", slot, "NODE", "x"}, `ERR Invalid shard "x"`},
	} {
		wantRedirect(t, fmt.Sprint(tt.args), tt.c.Do(ctx, tt.args...).Err(), tt.want)
	}
	if s := tc.srv["n0"].clusterRouter().SlotStates().String(); s != "" {
		t.Fatalf("refused SETSLOTs left states: %q", s)
	}

	if err := c0.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", 1).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c1.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", 0).Err(); err != nil {
		t.Fatal(err)
	}
	ask := fmt.Sprintf("ASK %d %s", slot, tc.addr("n1"))
	movedTo0 := fmt.Sprintf("MOVED %d %s", slot, tc.addr("n0"))
	movedTo1 := fmt.Sprintf("MOVED %d %s", slot, tc.addr("n1"))

	// The source serves what it has, and sends the rest to the target.
	if err := c0.Do(ctx, "MEM.INFO", have).Err(); err != nil {
		t.Fatalf("source, a collection it has: %v", err)
	}
	wantRedirect(t, "source, a new collection", c0.Do(ctx, "MEM.CREATE", moving, "DIM", 2).Err(), ask)
	// The target, without ASKING: MOVED back to the owner.
	wantRedirect(t, "target without ASKING", c1.Do(ctx, "MEM.CREATE", moving, "DIM", 2).Err(), movedTo0)

	// ASKING admits exactly one command, on its connection.
	conn := c1.Conn()
	defer conn.Close()
	if err := conn.Do(ctx, "ASKING").Err(); err != nil {
		t.Fatal(err)
	}
	if err := conn.Do(ctx, "ASKING").Err(); err != nil { // twice is once
		t.Fatal(err)
	}
	if err := conn.Do(ctx, "MEM.CREATE", moving, "DIM", 2).Err(); err != nil {
		t.Fatalf("target after ASKING: %v", err)
	}
	wantRedirect(t, "target, the command after the asked one", conn.Do(ctx, "MEM.INFO", moving).Err(), movedTo0)
	// ASKING is spent by any command, even one without a key.
	if err := conn.Do(ctx, "ASKING").Err(); err != nil {
		t.Fatal(err)
	}
	if err := conn.Do(ctx, "PING").Err(); err != nil {
		t.Fatal(err)
	}
	wantRedirect(t, "target, ASKING spent by PING", conn.Do(ctx, "MEM.INFO", moving).Err(), movedTo0)
	// A slot the target does not import: ASKING does not help.
	notImported := nameInShard(0, 2, 8)
	if cluster.HashSlot([]byte(notImported)) == slot {
		t.Fatal("test setup: pick another name")
	}
	if err := conn.Do(ctx, "ASKING").Err(); err != nil {
		t.Fatal(err)
	}
	wantRedirect(t, "ASKING for a slot not imported", conn.Do(ctx, "MEM.INFO", notImported).Err(),
		fmt.Sprintf("MOVED %d %s", cluster.HashSlot([]byte(notImported)), tc.addr("n0")))

	// Once the source no longer has a collection, it sends it on too.
	if err := c0.Do(ctx, "MEM.DROP", have).Err(); err != nil {
		t.Fatal(err)
	}
	wantRedirect(t, "source, a dropped collection", c0.Do(ctx, "MEM.INFO", have).Err(), ask)

	// The slot's owner switches: both shards say where it is now.
	for _, c := range []*redis.Client{c0, c1} {
		if err := c.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", 1).Err(); err != nil {
			t.Fatal(err)
		}
	}
	wantRedirect(t, "old owner after NODE", c0.Do(ctx, "MEM.INFO", moving).Err(), movedTo1)
	if err := c1.Do(ctx, "MEM.INFO", moving).Err(); err != nil {
		t.Fatalf("new owner after NODE: %v", err)
	}
	if s := tc.srv["n1"].clusterRouter().SlotStates().String(); s != fmt.Sprintf("%d:node:1", slot) {
		t.Fatalf("target's states after NODE: %q", s)
	}
	slots, err := c1.ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range slots {
		if s.Start <= slot && slot <= s.End {
			found = s.Start == slot && s.End == slot && s.Nodes[0].Addr == tc.addr("n1")
		}
	}
	if !found {
		t.Fatalf("CLUSTER SLOTS does not give slot %d alone to n1: %+v", slot, slots)
	}
	if err := c1.Do(ctx, "CLUSTER", "SETSLOT", slot, "STABLE").Err(); err != nil {
		t.Fatal(err)
	}
	if s := tc.srv["n1"].clusterRouter().SlotStates().String(); s != fmt.Sprintf("%d:node:1", slot) {
		t.Fatalf("target's states after STABLE: %q", s)
	}
	// MIGRATING is checked against the new owner.
	wantRedirect(t, "MIGRATING at the old owner", c0.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", 1).Err(),
		fmt.Sprintf("ERR I'm not the owner of hash slot %d (shard 1 is)", slot))
}

// TestClusterSetSlotReadOnlyUserAndTx: a read-only user may not change
// slot states, and SETSLOT inside MULTI is refused at EXEC.
func TestClusterSetSlotInTx(t *testing.T) {
	tc := startTestCluster(t, 0, 1)
	ctx := context.Background()
	conn := tc.client(t, "n0").Conn()
	defer conn.Close()
	cmds, err := conn.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "CLUSTER", "SETSLOT", 0, "MIGRATING", 1)
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "cannot run inside MULTI/EXEC") {
		t.Fatalf("SETSLOT in MULTI: %v (%v)", err, cmds)
	}
	if s := tc.srv["n0"].clusterRouter().SlotStates().String(); s != "" {
		t.Fatalf("SETSLOT in MULTI left states: %q", s)
	}
}
