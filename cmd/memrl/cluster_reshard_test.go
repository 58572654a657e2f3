package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memrl/memrl/cluster"
	"github.com/redis/go-redis/v9"
)

// TestClusterAddShardReshard grows a running cluster of real processes:
// memrl cluster add --new-shard starts a third shard (a raft group of two
// nodes, no slots), memrl cluster reshard gives it slots (more than the
// source has is refused, changing nothing), and a
// client then creates collections there while the old ones stay where
// they are. Then a SETSLOT MIGRATING survives a kill -9 and restart of
// its shard's only node (replayed from the raft log): the node still
// answers ASK.
func TestClusterAddShardReshard(t *testing.T) {
	bin := clusterBin(t)
	dir := t.TempDir()
	nodes := startTestCluster(t, bin, dir, 2, 1)
	ctx := context.Background()
	nodesPath := filepath.Join(dir, cluster.NodesFile)
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{nodes[0].Addr}})
	defer cc.Close()
	keep := collectionIn(cluster.DefaultSlots(2), 0, 1)
	if err := cc.Do(ctx, "MEM.CREATE", keep, "DIM", 2).Err(); err != nil {
		t.Fatal(err)
	}
	if err := cc.Do(ctx, "MEM.ADD", keep, "VALUES", 2, 1, 0, "ID", 7).Err(); err != nil {
		t.Fatal(err)
	}

	port := freePortRange(t, 2)
	out, err := exec.Command(bin, "cluster", "add", "--dir", dir, "--new-shard", "--replicas", "2",
		"--port", strconv.Itoa(port), "--", "--sync", "none").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "added shard 2") {
		t.Fatalf("memrl cluster add --new-shard: %v\n%s", err, out)
	}
	all, err := cluster.ReadNodes(nodesPath)
	if err != nil || len(all) != 4 || all[2].Shard != 2 || all[3].Shard != 2 || !processAlive(all[2].PID) || !processAlive(all[3].PID) {
		t.Fatalf("nodes.tsv after add --new-shard: %+v, %v", all, err)
	}
	slotsPath := filepath.Join(dir, cluster.SlotsFile)
	before, err := cluster.ReadSlots(slotsPath, 3)
	if err != nil || *before != *cluster.DefaultSlots(2) {
		t.Fatalf("slots.tsv after add --new-shard is not the 2-shard map: %v", err)
	}
	if shards, err := cc.ClusterShards(ctx).Result(); err != nil || len(shards) != 3 {
		t.Fatalf("CLUSTER SHARDS after add: %d shards, %v", len(shards), err)
	}

	// More slots than shard 0 has: refused, nothing moves.
	out, err = exec.Command(bin, "cluster", "reshard", "--dir", dir, "--from", "0", "--to", "2", "--slots", "8193").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "shard 0 has 8192 slots") {
		t.Fatalf("reshard of more slots than the shard has: %v\n%s", err, out)
	}
	if m, err := cluster.ReadSlots(slotsPath, 3); err != nil || *m != *before {
		t.Fatalf("a refused reshard changed slots.tsv (%v)", err)
	}
	out, err = exec.Command(bin, "cluster", "reshard", "--dir", dir, "--from", "0", "--to", "2", "--slots", "40").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "moved 40 slots from shard 0 to shard 2") {
		t.Fatalf("memrl cluster reshard: %v\n%s", err, out)
	}
	after, err := cluster.ReadSlots(slotsPath, 3)
	if err != nil {
		t.Fatal(err)
	}
	n2 := 0
	for s := range cluster.NumSlots {
		if after[s] == 2 {
			n2++
			if before[s] != 0 {
				t.Fatalf("slot %d moved from shard %d", s, before[s])
			}
		}
	}
	if n2 != 40 || after[cluster.HashSlot([]byte(keep))] != 0 {
		t.Fatalf("shard 2 has %d slots; %s's slot is shard %d's", n2, keep, after[cluster.HashSlot([]byte(keep))])
	}

	// A client with a fresh slot table creates a collection in a moved
	// slot: it lands on shard 2; the old collection is unchanged.
	cc2 := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{nodes[1].Addr}})
	defer cc2.Close()
	fresh := collectionIn(after, 2, 2)
	if err := cc2.Do(ctx, "MEM.CREATE", fresh, "DIM", 2).Err(); err != nil {
		t.Fatal(err)
	}
	leader2, err := shardLeader(ctx, all, 2)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := cluster.Do(ctx, leader2.Addr, 5*time.Second, "MEM.LIST"); err != nil || fmt.Sprint(v) != "["+fresh+"]" {
		t.Fatalf("shard 2's collections: %v, %v", v, err)
	}
	if err := cc2.Do(ctx, "MEM.GET", keep, 7).Err(); err != nil {
		t.Fatalf("the collection that stayed: %v", err)
	}
	// Shard 0 sends the moved slot on.
	if err := redis.NewClient(&redis.Options{Addr: nodes[0].Addr}).Do(ctx, "MEM.INFO", fresh).Err(); err == nil ||
		err.Error() != fmt.Sprintf("MOVED %d %s", cluster.HashSlot([]byte(fresh)), leader2.Addr) {
		t.Fatalf("shard 0 on a moved slot: %v", err)
	}

	// SETSLOT survives kill -9: shard 0 is one node; its state comes back
	// from the raft log.
	ask := collectionIn(after, 0, 3)
	slot := cluster.HashSlot([]byte(ask))
	if _, err := cluster.Do(ctx, nodes[0].Addr, 5*time.Second, "CLUSTER", "SETSLOT", strconv.Itoa(slot), "MIGRATING", "1"); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("ASK %d %s", slot, nodes[1].Addr)
	if _, err := cluster.Do(ctx, nodes[0].Addr, 5*time.Second, "MEM.INFO", ask); err == nil || err.Error() != want {
		t.Fatalf("before the kill: %v, want %s", err, want)
	}
	if err := syscall.Kill(nodes[0].PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); processAlive(nodes[0].PID); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the killed node still runs")
		}
	}
	// (startNode would start this test binary: run memrl itself.)
	n := all[0]
	restart := exec.Command(bin, "serve", "--dir", filepath.Join(dir, n.ID), "--addr", n.Addr,
		"--cluster-nodes", nodesPath, "--node-id", n.ID, "--sync", "none")
	restart.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := restart.Start(); err != nil {
		t.Fatal(err)
	}
	go restart.Wait()
	all[0].PID = restart.Process.Pid
	if err := cluster.WriteNodes(nodesPath, all); err != nil { // so that cluster stop ends it
		t.Fatal(err)
	}
	var last error
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, last = cluster.Do(ctx, nodes[0].Addr, 2*time.Second, "MEM.INFO", ask)
		if last != nil && last.Error() == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after kill -9 and restart: %v, want %s", last, want)
		}
	}
	if err := cc2.Do(ctx, "MEM.GET", keep, 7).Err(); err != nil {
		t.Fatalf("%s after the restart: %v", keep, err)
	}
}

// TestPlanRebalance: a shard added with no slots gets an even share from
// the others, taken only from their slots without collections; what
// cannot move is counted; an even map plans nothing.
func TestPlanRebalance(t *testing.T) {
	slots := cluster.DefaultSlots(2) // shards 0 and 1 have 8192 each; shard 2 none
	all := func(shard int) []int {
		var out []int
		for s := cluster.NumSlots - 1; s >= 0; s-- {
			if int(slots[s]) == shard {
				out = append(out, s)
			}
		}
		return out
	}
	plan, short := planRebalance(slots, 3, [][]int{all(0), all(1), nil})
	if short != 0 || len(plan) != 2 {
		t.Fatalf("plan %d moves, short %d", len(plan), short)
	}
	after := *slots
	for _, m := range plan {
		if m.to != 2 {
			t.Fatalf("a move to shard %d", m.to)
		}
		for _, s := range m.slots {
			if int(after[s]) != m.from {
				t.Fatalf("slot %d is not shard %d's", s, m.from)
			}
			after[s] = uint16(m.to)
		}
	}
	for k, want := range evenShares(3) {
		if got := countSlots(&after, k); got != want {
			t.Fatalf("shard %d has %d slots after the plan, want %d", k, got, want)
		}
	}
	if want := []int{5462, 5461, 5461}; !slices.Equal(evenShares(3), want) {
		t.Fatalf("even shares %v, want %v", evenShares(3), want)
	}
	// Shard 1 can give only 100 slots (the rest hold collections).
	plan, short = planRebalance(slots, 3, [][]int{all(0), all(1)[:100], nil})
	if short != 2731-100 {
		t.Fatalf("short %d, want %d", short, 2731-100)
	}
	n := 0
	for _, m := range plan {
		n += len(m.slots)
	}
	if n != 2730+100 {
		t.Fatalf("%d slots planned, want %d", n, 2730+100)
	}
	if plan, short := planRebalance(&after, 3, [][]int{all(0), all(1), nil}); len(plan) != 0 || short != 0 {
		t.Fatalf("an even map planned %d moves, short %d", len(plan), short)
	}
}

// TestPlanRebalanceBytes: slots with data move from the heaviest shard to
// the lightest until each is within 10% of the mean, a slot never more
// than half the gap (so no collection goes back and forth), and the plan
// is the same every time.
func TestPlanRebalanceBytes(t *testing.T) {
	// Shards 0 and 1 hold 6 collections of 100 bytes each, shard 2 none.
	sb := []map[int]int64{{1: 100, 2: 100, 3: 100, 4: 100, 5: 100, 6: 100}, {11: 100, 12: 100, 13: 100, 14: 100, 15: 100, 16: 100}, {}}
	plan, total := planBytes(3, sb)
	if !slices.Equal(total, []int64{400, 400, 400}) || len(plan) != 4 {
		t.Fatalf("plan %+v, bytes after %v", plan, total)
	}
	for _, m := range plan {
		if m.to != 2 || len(m.slots) != 1 {
			t.Fatalf("a move %+v", m)
		}
	}
	again, _ := planBytes(3, sb)
	if !reflect.DeepEqual(plan, again) {
		t.Fatalf("two plans differ: %+v, %+v", plan, again)
	}
	// One collection as heavy as all the rest: it stays; the small ones
	// move only while they narrow the gap.
	plan, total = planBytes(2, []map[int]int64{{1: 1000, 2: 10, 3: 10}, {}})
	if len(plan) != 2 || total[0] != 1000 || total[1] != 20 {
		t.Fatalf("plan %+v, bytes after %v", plan, total)
	}
	// Balanced already: nothing.
	if plan, _ := planBytes(2, []map[int]int64{{1: 100}, {2: 105}}); len(plan) != 0 {
		t.Fatalf("a balanced cluster planned %+v", plan)
	}
}
