package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/memrl/memrl/cluster"
	"github.com/redis/go-redis/v9"
)

// TestClusterReshardLeaderKill9: kill -9 of the source shard's leader, then
// of the target's, each while memrl cluster reshard moves slots between
// two shards of three real processes and a client writes: each reshard
// still finishes (it finds the new leader and repeats a SETSLOT of
// unknown outcome), every slot ends in exactly one shard, each collection
// is in exactly one shard, the one slots.tsv names, and readable, and every
// acknowledged write is there. (CI runs one kill per side; the steps a
// kill lands in vary from run to run.)
func TestClusterReshardLeaderKill9(t *testing.T) {
	bin := clusterBin(t)
	dir := t.TempDir()
	nodes := startTestCluster(t, bin, dir, 2, 3)
	nodesPath := filepath.Join(dir, cluster.NodesFile)
	ctx := context.Background()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{nodes[0].Addr, nodes[3].Addr}, MaxRedirects: 16})
	defer cc.Close()
	var names []string
	for i := range 6 {
		name := collectionIn(cluster.DefaultSlots(2), i%2, 10+i)
		names = append(names, name)
		if err := cc.Do(ctx, "MEM.CREATE", name, "DIM", 2).Err(); err != nil {
			t.Fatal(err)
		}
	}

	// A writer, bounded in count and time, records what was acknowledged.
	var mu sync.Mutex // guards acked, failed, lastErr
	acked := map[string][]int{}
	failed := 0
	var lastErr error
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		deadline := time.Now().Add(3 * time.Minute)
		for i := 1; i <= 20000 && time.Now().Before(deadline); i++ {
			select {
			case <-stop:
				return
			default:
			}
			name := names[i%len(names)]
			err := cc.Do(ctx, "MEM.ADD", name, "VALUES", 2, 1, 0, "ID", i).Err()
			mu.Lock()
			if err == nil {
				acked[name] = append(acked[name], i)
			} else {
				failed, lastErr = failed+1, err
			}
			mu.Unlock()
		}
	}()

	all := slices.Clone(nodes)
	for round, victim := range []int{0, 1} { // the source's leader, then the target's
		before, err := cluster.ReadSlots(filepath.Join(dir, cluster.SlotsFile), 2)
		if err != nil {
			t.Fatal(err)
		}
		lead, err := shardLeader(ctx, all, victim)
		if err != nil {
			t.Fatal(err)
		}
		target, err := shardLeader(ctx, all, 1)
		if err != nil {
			t.Fatal(err)
		}
		rs := exec.Command(bin, "cluster", "reshard", "--dir", dir, "--from", "0", "--to", "1", "--slots", "150", "--wait", "90s")
		var out strings.Builder
		rs.Stdout, rs.Stderr = &out, &out
		if err := rs.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill once the target has taken at least one slot (its CLUSTER
		// SLOTS shows the SETSLOT NODE), so the kill lands mid-reshard.
		tc := redis.NewClient(&redis.Options{Addr: target.Addr})
		waitFor(t, 60*time.Second, "the first slot to move", func() bool {
			ranges, err := tc.ClusterSlots(ctx).Result()
			if err != nil {
				return false
			}
			n := 0
			for _, r := range ranges {
				if len(r.Nodes) > 0 && r.Nodes[0].Addr == target.Addr {
					n += r.End - r.Start + 1
				}
			}
			return n > countSlots(before, 1)
		})
		tc.Close()
		if err := syscall.Kill(lead.PID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if err := rs.Wait(); err != nil || !strings.Contains(out.String(), "moved ") {
			t.Fatalf("round %d: reshard after kill -9 of %s: %v\n%s", round, lead.ID, err, out.String())
		}
		// Restart the killed node (recorded in nodes.tsv for cluster stop).
		waitFor(t, 10*time.Second, "the killed node to exit", func() bool { return !processAlive(lead.PID) })
		restart := exec.Command(bin, "serve", "--dir", filepath.Join(dir, lead.ID), "--addr", lead.Addr,
			"--cluster-nodes", nodesPath, "--node-id", lead.ID, "--sync", "none")
		restart.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := restart.Start(); err != nil {
			t.Fatal(err)
		}
		go restart.Wait()
		for i := range all {
			if all[i].ID == lead.ID {
				all[i].PID = restart.Process.Pid
			}
		}
		if err := cluster.WriteNodes(nodesPath, all); err != nil {
			t.Fatal(err)
		}
		after, err := cluster.ReadSlots(filepath.Join(dir, cluster.SlotsFile), 2)
		if err != nil {
			t.Fatal(err)
		}
		if n0, n1 := countSlots(before, 0)-countSlots(after, 0), countSlots(after, 1)-countSlots(before, 1); n0 != n1 || n0 < 1 {
			t.Fatalf("round %d: shard 0 gave %d slots, shard 1 took %d", round, n0, n1)
		}
	}
	// Some more writes after the last move, then stop the writer.
	ackedNow := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, ids := range acked {
			n += len(ids)
		}
		return n
	}
	base := ackedNow()
	waitFor(t, 60*time.Second, "writes after the reshards", func() bool { return ackedNow() >= base+50 })
	close(stop)
	<-done

	// Every collection in exactly one shard, the one slots.tsv names.
	slots, err := cluster.ReadSlots(filepath.Join(dir, cluster.SlotsFile), 2)
	if err != nil {
		t.Fatal(err)
	}
	where := map[string][]int{}
	for shard := range 2 {
		l, err := shardLeader(ctx, all, shard)
		if err != nil {
			t.Fatal(err)
		}
		v, err := cluster.Do(ctx, l.Addr, 5*time.Second, "MEM.LIST")
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range v.([]any) {
			where[n.(string)] = append(where[n.(string)], shard)
		}
	}
	for _, name := range names {
		if w := where[name]; len(w) != 1 || w[0] != int(slots[cluster.HashSlot([]byte(name))]) {
			t.Errorf("%s is in shards %v; slots.tsv says %d", name, w, slots[cluster.HashSlot([]byte(name))])
		}
	}
	// Every acknowledged write is there.
	total := 0
	for name, ids := range acked {
		total += len(ids)
		n, err := cc.Do(ctx, "MEM.COUNT", name).Int()
		if err != nil || n < len(ids) {
			t.Fatalf("%s: MEM.COUNT %d, %v; %d adds acknowledged", name, n, err, len(ids))
		}
		for _, id := range []int{ids[0], ids[len(ids)-1]} {
			if err := cc.Do(ctx, "MEM.GET", name, id).Err(); err != nil {
				t.Fatalf("%s: acknowledged memory %d: %v", name, id, err)
			}
		}
	}
	if total == 0 {
		t.Fatal("no write was acknowledged")
	}
	t.Logf("%d adds acknowledged, all present; %d failed (outcome unknown; the last: %v)", total, failed, lastErr)
}

// waitFor polls cond until it holds or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
