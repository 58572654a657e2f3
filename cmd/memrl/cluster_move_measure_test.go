package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/memrl/memrl/cluster"
)

// TestMeasureRebalance is the measure of docs/CLUSTER.md "Measured" (not a
// test CI runs: MEMRL_MEASURE_REBALANCE=<memories> turns it on): a cluster
// of 2 shards × 3 nodes (--sync none) holding that many 16-d memories in
// 24 collections gets a third shard of 3 nodes (cluster add --new-shard)
// and memrl cluster rebalance moves collections to it, while 8 clients
// write (MEM.ADD, one at a time each, through go-redis's ClusterClient,
// which follows MOVED and ASK and retries TRYAGAIN). It reports the
// rebalance's time, each collection's pause, the writes' p50/p99 for as
// long before the rebalance (no move) and during it, and checks that every
// acknowledged write is there (MEM.COUNT of each collection: loaded +
// acknowledged, at most + unknown outcomes).
func TestMeasureRebalance(t *testing.T) {
	total, _ := strconv.Atoi(os.Getenv("MEMRL_MEASURE_REBALANCE"))
	if total == 0 {
		t.Skip("MEMRL_MEASURE_REBALANCE=<memories> runs the measure")
	}
	const colls, dim, writers = 24, 16, 8
	bin := clusterBin(t)
	dir := t.TempDir()
	nodes := startTestCluster(t, bin, dir, 2, 3)
	ctx := context.Background()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{nodes[0].Addr, nodes[3].Addr},
		MaxRedirects: 64, ReadTimeout: 60 * time.Second, PoolSize: 32})
	defer cc.Close()
	names := make([]string, colls)
	for i := range names {
		names[i] = fmt.Sprintf("bench-%d", i)
		if err := cc.Do(ctx, "MEM.CREATE", names[i], "DIM", dim).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// Load: MEM.MADD of 500 memories each, 4 loaders.
	start := time.Now()
	per := total / colls
	var wg sync.WaitGroup
	work := make(chan [2]int)
	var loadErr error
	var loadMu sync.Mutex // guards loadErr
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(1))
			blob := make([]byte, 4*dim)
			for w := range work {
				args := []any{"MEM.MADD", names[w[0]]}
				for id := w[1]; id < w[1]+500 && id <= per; id++ {
					for k := range dim {
						binary.LittleEndian.PutUint32(blob[4*k:], math.Float32bits(rng.Float32()))
					}
					args = append(args, "FP32", string(blob), "ID", id, "PAYLOAD", "m"+strconv.Itoa(id))
				}
				// Retried when its outcome is unknown (a leader lost
				// mid-commit on the loaded machine); "already exists":
				// the earlier try was applied (MEM.MADD is atomic).
				var err error
				for try := 0; try < 20; try++ {
					if err = cc.Do(ctx, args...).Err(); err == nil || strings.Contains(err.Error(), "already exists") {
						err = nil
						break
					}
					time.Sleep(time.Second)
				}
				if err != nil {
					loadMu.Lock()
					loadErr = err
					loadMu.Unlock()
				}
			}
		}()
	}
	for c := range colls {
		for id := 1; id <= per; id += 500 {
			work <- [2]int{c, id}
		}
	}
	close(work)
	wg.Wait()
	if loadErr != nil {
		t.Fatal(loadErr)
	}
	t.Logf("loaded %d memories (%d collections × %d, %d-d) in %v", per*colls, colls, per, dim, time.Since(start).Round(time.Second))

	port := freePortRange(t, 3)
	out, err := exec.Command(bin, "cluster", "add", "--dir", dir, "--new-shard", "--replicas", "3",
		"--port", strconv.Itoa(port), "--", "--sync", "none").CombinedOutput()
	if err != nil {
		t.Fatalf("cluster add: %v\n%s", err, out)
	}

	// Writers: ids above the loaded ones, each writer its own range.
	type sample struct {
		at  time.Time
		lat time.Duration
		c   int // the collection written
	}
	var mu sync.Mutex // guards samples, acked, unknown
	var samples []sample
	acked := make([]int, colls)
	unknown := make([]int, colls)
	stop := make(chan struct{})
	var wwg sync.WaitGroup
	for w := range writers {
		wwg.Add(1)
		go func() {
			defer wwg.Done()
			deadline := time.Now().Add(30 * time.Minute)
			for i := 0; i < 1_000_000 && time.Now().Before(deadline); i++ {
				select {
				case <-stop:
					return
				default:
				}
				c := (w + i*writers) % colls
				id := per + 1 + w*1_000_000 + i
				t0 := time.Now()
				err := cc.Do(ctx, "MEM.ADD", names[c], "VALUES", dim, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, "ID", id).Err()
				lat := time.Since(t0)
				mu.Lock()
				if err == nil {
					acked[c]++
					samples = append(samples, sample{t0, lat, c})
				} else {
					unknown[c]++
				}
				mu.Unlock()
			}
		}()
	}
	baseline := 60 * time.Second
	if d, err := time.ParseDuration(os.Getenv("MEMRL_MEASURE_BASELINE")); err == nil {
		baseline = d
	}
	time.Sleep(baseline) // the writers' figures without a move
	rbStart := time.Now()
	out, err = exec.Command(bin, "cluster", "rebalance", "--dir", dir, "--wait", "120s").CombinedOutput()
	rbEnd := time.Now()
	if err != nil {
		t.Fatalf("rebalance: %v\n%s", err, out)
	}
	close(stop)
	wwg.Wait()
	stats := func(from, to time.Time) (n int, p50, p99 time.Duration) {
		var l []time.Duration
		for _, s := range samples {
			if !s.at.Before(from) && s.at.Before(to) {
				l = append(l, s.lat)
			}
		}
		if len(l) == 0 {
			return 0, 0, 0
		}
		slices.Sort(l)
		return len(l), l[len(l)/2], l[len(l)*99/100]
	}
	mu.Lock()
	defer mu.Unlock()
	nb, b50, b99 := stats(rbStart.Add(-baseline), rbStart)
	nd, d50, d99 := stats(rbStart, rbEnd)
	took := rbEnd.Sub(rbStart)
	t.Logf("rebalance took %v\n%s", took.Round(time.Millisecond), out)
	t.Logf("writes without a move (%v before): %d acknowledged, %.0f/s, p50 %v, p99 %v", baseline, nb, float64(nb)/baseline.Seconds(), b50, b99)
	t.Logf("writes during the rebalance (%v): %d acknowledged, %.0f/s, p50 %v, p99 %v", took.Round(time.Second), nd, float64(nd)/took.Seconds(), d50, d99)

	// Nothing acknowledged lost, nothing doubled; the collections are
	// spread over the three shards.
	lost, unk := 0, 0
	for c, name := range names {
		n, err := cc.Do(ctx, "MEM.COUNT", name).Int()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if n < per+acked[c] {
			lost += per + acked[c] - n
		}
		if n > per+acked[c]+unknown[c] {
			t.Errorf("%s: MEM.COUNT %d > %d loaded + %d acknowledged + %d unknown", name, n, per, acked[c], unknown[c])
		}
		unk += unknown[c]
	}
	where := map[int]int{}
	nodesNow, _ := cluster.ReadNodes(filepath.Join(dir, cluster.NodesFile))
	for shard := range 3 {
		l, err := shardLeader(ctx, nodesNow, shard)
		if err != nil {
			t.Fatal(err)
		}
		v, err := cluster.Do(ctx, l.Addr, 10*time.Second, "MEM.LIST")
		if err != nil {
			t.Fatal(err)
		}
		where[shard] = len(v.([]any))
		if shard == 2 {
			// The writes to the collections the new shard received,
			// during the rebalance: once moved, the target's other
			// imports delay them (an import's COMMIT stalls its shard's
			// applies).
			moved := map[string]bool{}
			for _, x := range v.([]any) {
				moved[fmt.Sprint(x)] = true
			}
			var l []time.Duration
			for _, s := range samples {
				if moved[names[s.c]] && !s.at.Before(rbStart) && s.at.Before(rbEnd) {
					l = append(l, s.lat)
				}
			}
			if len(l) > 0 {
				slices.Sort(l)
				t.Logf("writes during the rebalance to the %d collections moved to the new shard: %d, p50 %v, p99 %v, p99.9 %v, max %v",
					len(moved), len(l), l[len(l)/2], l[len(l)*99/100], l[len(l)*999/1000], l[len(l)-1])
			}
		}
	}
	t.Logf("acknowledged writes lost: %d (unknown outcomes: %d); collections per shard: %v", lost, unk, where)
	if lost != 0 {
		t.Fatalf("%d acknowledged writes lost", lost)
	}
	if !strings.Contains(string(out), "moved ") || where[2] == 0 {
		t.Fatalf("nothing moved to the new shard: %v\n%s", where, out)
	}
}
