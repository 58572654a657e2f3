package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/memrl/memrl/cluster"
)

// Rebalancing by bytes (docs/CLUSTER.md "Resharding"). A slot's weight is
// the bytes of its collections (INFO keyspace: mapped_bytes, the vectors,
// plus data_bytes, what the rest of the data holds in memory), a shard's
// the sum of its slots'. The rule: while the heaviest shard holds more
// than rebalanceSlack above the mean, move to the lightest shard the
// heaviest shard's slot with the most bytes that is at most half their
// difference (so the spread between them shrinks and neither crosses the
// other); stop when no slot fits. Then the slot counts are evened with
// slots without collections, as without data.

// rebalanceSlack: a shard within 10% of the mean bytes is balanced; closer
// would move collections back and forth for little.
const rebalanceSlack = 0.10

// shardBytes returns, for shard's leader, each of its slots' bytes.
func shardBytes(ctx context.Context, nodes []cluster.Node, shard int) (map[int]int64, error) {
	v, err := leaderReply(ctx, nodes, shard, "INFO", "keyspace")
	if err != nil {
		return nil, fmt.Errorf("INFO keyspace on shard %d: %w", shard, err)
	}
	s, _ := v.(string)
	out := map[int]int64{}
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		name, fields, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(name, "coll_") {
			continue
		}
		name = strings.ReplaceAll(strings.TrimPrefix(name, "coll_"), "%3A", ":")
		var b int64
		for _, f := range strings.Split(fields, ",") {
			k, val, _ := strings.Cut(f, "=")
			if k == "mapped_bytes" || k == "data_bytes" {
				n, _ := strconv.ParseInt(val, 10, 64)
				b += n
			}
		}
		out[cluster.HashSlot([]byte(name))] += max(b, 1) // an empty collection still has to move
	}
	return out, nil
}

// planBytes plans single-slot moves of slots with data (per shard, slot →
// bytes) by the rule above; it returns the moves and each shard's bytes
// after them.
func planBytes(shards int, slotBytes []map[int]int64) ([]slotMove, []int64) {
	total := make([]int64, shards)
	var sum int64
	for k := range shards {
		for _, b := range slotBytes[k] {
			total[k] += b
		}
		sum += total[k]
	}
	owned := make([]map[int]int64, shards)
	for k := range shards {
		owned[k] = map[int]int64{}
		for s, b := range slotBytes[k] {
			owned[k][s] = b
		}
	}
	mean := float64(sum) / float64(shards)
	var plan []slotMove
	for range 16384 {
		h, l := 0, 0
		for k := range shards {
			if total[k] > total[h] {
				h = k
			}
			if total[k] < total[l] {
				l = k
			}
		}
		if float64(total[h]) <= mean*(1+rebalanceSlack) {
			break
		}
		half := (total[h] - total[l]) / 2
		best, bestB := -1, int64(0)
		// Deterministic: by bytes, then the higher slot.
		keys := make([]int, 0, len(owned[h]))
		for s := range owned[h] {
			keys = append(keys, s)
		}
		sort.Sort(sort.Reverse(sort.IntSlice(keys)))
		for _, s := range keys {
			if b := owned[h][s]; b <= half && b > bestB {
				best, bestB = s, b
			}
		}
		if best < 0 {
			break
		}
		plan = append(plan, slotMove{from: h, to: l, slots: []int{best}})
		delete(owned[h], best)
		owned[l][best] = bestB
		total[h] -= bestB
		total[l] += bestB
	}
	return plan, total
}
