package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"time"

	"github.com/memrl/memrl/cluster"
	"github.com/memrl/memrl/internal/cliflag"
)

// memrl cluster rebalance (docs/CLUSTER.md "Resharding"): even bytes,
// then even slot counts, by the moves of memrl cluster reshard
// (cluster_reshard.go).

// clusterRebalance is memrl cluster rebalance: slots with collections move
// from the heaviest shards to the lightest until each is within 10% of the
// mean bytes (cluster_rebalance_bytes.go); then every shard gets
// NumSlots/shards slots (the first NumSlots%shards one more) as far as
// slots without collections allow, moving them from the shards that have
// more to those that have fewer.
func clusterRebalance(args []string) error {
	args, _, err := setNodeAuth(args) // cluster_security.go
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("cluster rebalance", flag.ContinueOnError)
	dir := fs.String("dir", "", "the running cluster's folder")
	wait := fs.Duration("wait", 60*time.Second, "how long to wait for a shard's leader at each step")
	fs.Usage = func() { fmt.Fprint(fs.Output(), clusterReshardUsage); fs.PrintDefaults() }
	if err := cliflag.Parse(fs, args, 0); err != nil {
		return err
	}
	if *dir == "" {
		return cliflag.Usagef("--dir is required")
	}
	nodes, err := cluster.ReadNodes(filepath.Join(*dir, cluster.NodesFile))
	if err != nil {
		return err
	}
	shards := cluster.Shards(nodes)
	slots, err := cluster.ReadSlots(filepath.Join(*dir, cluster.SlotsFile), shards)
	if err != nil {
		return err
	}
	moveWait = *wait
	ctx, cancel := context.WithTimeout(context.Background(), *wait)
	defer cancel()
	// A move a stopped run left is finished or rolled back first.
	if n, err := resolveMoves(ctx, nodes, shards); err != nil {
		return err
	} else if n > 0 {
		fmt.Printf("memrl cluster: resolved %d collection moves left by an earlier run\n", n)
	}
	plan, short, err := rebalancePlan(nodes, slots, shards, *wait)
	if err != nil {
		return err
	}
	total := 0
	var errs []error
	for _, m := range plan {
		moved, err := moveSlots(*wait, nodes, slots, m.slots, m.from, m.to)
		total += moved
		if err != nil {
			errs = append(errs, err)
			break
		}
	}
	if total > 0 {
		errs = append(errs, writeSlotsAndReload(*dir, nodes, slots, shards))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w (%d slots moved)", err, total)
	}
	fmt.Printf("memrl cluster: moved %d slots; slots per shard:", total)
	for k := range shards {
		fmt.Printf(" %d", countSlots(slots, k))
	}
	fmt.Println()
	if totals.collections > 0 {
		fmt.Printf("moved %d collections (%d bytes; %d commands replayed; writes paused at most %v)\n",
			totals.collections, totals.bytes, totals.replayed, totals.maxPause.Round(time.Microsecond))
	}
	if short > 0 {
		fmt.Printf("%d slots short of an even count: the slots left hold collections, which move by bytes, not count\n", short)
	}
	return nil
}

// slotMove is a batch of slots for moveSlots.
type slotMove struct {
	from, to int
	slots    []int
}

// rebalancePlan plans the moves of a rebalance: first slots with data,
// by bytes (planBytes, cluster_rebalance_bytes.go), then slots without
// collections, to even the slot counts left after those (planRebalance).
func rebalancePlan(nodes []cluster.Node, slots *cluster.SlotMap, shards int, wait time.Duration) (plan []slotMove, short int, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	slotBytes := make([]map[int]int64, shards)
	hasData := map[int]bool{}
	for k := range shards {
		if slotBytes[k], err = shardBytes(ctx, nodes, k); err != nil {
			return nil, 0, err
		}
		for s := range slotBytes[k] {
			hasData[s] = true
		}
	}
	plan, _ = planBytes(shards, slotBytes)
	after := *slots
	for _, m := range plan {
		after[m.slots[0]] = uint16(m.to)
	}
	free := make([][]int, shards)
	for k, want := range evenShares(shards) {
		if countSlots(&after, k) <= want {
			continue
		}
		for s := cluster.NumSlots - 1; s >= 0; s-- {
			if int(after[s]) == k && !hasData[s] {
				free[k] = append(free[k], s)
			}
		}
	}
	more, short := planRebalance(&after, shards, free)
	return append(plan, more...), short, nil
}

// evenShares returns each shard's even share of the slots: NumSlots/shards,
// the first NumSlots%shards one more.
func evenShares(shards int) []int {
	want := make([]int, shards)
	for k := range want {
		want[k] = cluster.NumSlots / shards
		if k < cluster.NumSlots%shards {
			want[k]++
		}
	}
	return want
}

// planRebalance pairs the shards over their even share with those under
// it, giving only the slots of free (per shard, its slots without
// collections, in the order to give them); short counts the slots a shard
// could not give because they hold collections.
func planRebalance(slots *cluster.SlotMap, shards int, free [][]int) (plan []slotMove, short int) {
	want := evenShares(shards)
	need := make([]int, shards) // > 0: to receive; < 0: to give
	for k := range shards {
		need[k] = want[k] - countSlots(slots, k)
	}
	for from := range shards {
		if need[from] >= 0 {
			continue
		}
		give := min(-need[from], len(free[from]))
		short += -need[from] - give
		f := free[from][:give]
		for to := range shards {
			if need[to] <= 0 || len(f) == 0 {
				continue
			}
			n := min(need[to], len(f))
			plan = append(plan, slotMove{from: from, to: to, slots: f[:n]})
			f, need[to] = f[n:], need[to]-n
		}
	}
	return plan, short
}

func countSlots(slots *cluster.SlotMap, shard int) int {
	n := 0
	for _, s := range slots {
		if int(s) == shard {
			n++
		}
	}
	return n
}
