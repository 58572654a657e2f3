package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// clusterAddr returns a free loopback client address whose raft port
// (port + 10000) is free too.
func clusterAddr(t *testing.T) string {
	t.Helper()
	for i := 0; i < 100; i++ {
		a := freeAddr(t)
		_, p, _ := net.SplitHostPort(a)
		port, _ := strconv.Atoi(p)
		if port+10000 > 65535 {
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port+10000))
		if err != nil {
			continue
		}
		ln.Close()
		return a
	}
	t.Fatal("no free pair of ports")
	return ""
}

// replicaProc is one `memrl serve --cluster-nodes` process.
type replicaProc struct {
	id, addr string
	cmd      *exec.Cmd
	rdb      *redis.Client
	dead     atomic.Bool
}

// raftStatus returns RAFT.STATUS as a map, or nil.
func raftStatus(rdb *redis.Client) map[string]string {
	v, err := rdb.Do(context.Background(), "RAFT.STATUS").Slice()
	if err != nil {
		return nil
	}
	m := map[string]string{}
	for i := 0; i+1 < len(v); i += 2 {
		m[fmt.Sprint(v[i])] = fmt.Sprint(v[i+1])
	}
	return m
}

// leaderOf returns the live process that says it leads, or nil.
func leaderOf(procs []*replicaProc) *replicaProc {
	for _, p := range procs {
		if !p.dead.Load() && raftStatus(p.rdb)["role"] == "leader" {
			return p
		}
	}
	return nil
}

// TestReplicaKill9Leader runs a 3-node shard of real `memrl serve`
// processes, kills the leader with SIGKILL while 8 clients add and
// reward, and checks that a new leader takes over and that every
// acknowledged write is on both survivors, whose states are identical.
func TestReplicaKill9Leader(t *testing.T) {
	bin := buildMemrl(t)
	dir := t.TempDir()
	nodesPath := filepath.Join(dir, "nodes.tsv")
	procs := make([]*replicaProc, 3)
	lines := "# memrl nodes v1\n"
	for i := range procs {
		procs[i] = &replicaProc{id: fmt.Sprintf("n%d", i+1), addr: clusterAddr(t)}
		lines += fmt.Sprintf("%s\t%s\t0\t0\n", procs[i].id, procs[i].addr)
	}
	if err := os.WriteFile(nodesPath, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		logf, err := os.Create(filepath.Join(dir, p.id+".log"))
		if err != nil {
			t.Fatal(err)
		}
		p.cmd = exec.Command(bin, "serve", "--dir", filepath.Join(dir, p.id), "--cluster-nodes", nodesPath, "--node-id", p.id)
		p.cmd.Stdout, p.cmd.Stderr = logf, logf
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		p.rdb = redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1})
		p := p
		t.Cleanup(func() {
			p.rdb.Close()
			p.cmd.Process.Kill()
			p.cmd.Wait()
			logf.Close()
		})
		waitServing(t, p.cmd, p.rdb, logf.Name())
	}
	waitFor := func(what string, f func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !f(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	var first *replicaProc
	waitFor("a leader", func() bool { first = leaderOf(procs); return first != nil })
	ctx := context.Background()
	if err := first.rdb.Do(ctx, "MEM.CREATE", "k", "DIM", 2).Err(); err != nil {
		t.Fatal(err)
	}

	const clients = 8
	type tally struct {
		added        []uint64
		acked, tried map[uint64]int
	}
	tallies := make([]*tally, clients)
	var stop, killed atomic.Bool
	var afterKill atomic.Int64
	var wg sync.WaitGroup
	for c := range tallies {
		tl := &tally{acked: map[uint64]int{}, tried: map[uint64]int{}}
		tallies[c] = tl
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			var at *replicaProc
			var rdb *redis.Client
			defer func() {
				if rdb != nil {
					rdb.Close()
				}
			}()
			next := uint64(c*1_000_000 + 1)
			for i := 0; !stop.Load(); i++ {
				if at == nil || i%50 == 0 {
					if l := leaderOf(procs); l != nil && l != at {
						if rdb != nil {
							rdb.Close()
						}
						at, rdb = l, redis.NewClient(&redis.Options{Addr: l.addr, MaxRetries: -1, ReadTimeout: 10 * time.Second})
					}
				}
				if rdb == nil {
					time.Sleep(20 * time.Millisecond)
					continue
				}
				var err error
				if i%3 == 0 || len(tl.added) == 0 {
					id := next
					next++
					if err = rdb.Do(ctx, "MEM.ADD", "k", "VALUES", 2, 1, float64(i), "ID", id).Err(); err == nil {
						tl.added = append(tl.added, id)
					}
				} else {
					id := tl.added[i%len(tl.added)]
					tl.tried[id]++
					if err = rdb.Do(ctx, "MEM.REWARD", "k", 1, id).Err(); err == nil {
						tl.acked[id]++
					}
				}
				if err != nil {
					at = nil // find the leader again
					time.Sleep(20 * time.Millisecond)
				} else if killed.Load() {
					afterKill.Add(1)
				}
			}
		}(c)
	}
	time.Sleep(2 * time.Second)
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.dead.Store(true)
	killedAt := time.Now()
	killed.Store(true)
	var survivors []*replicaProc
	for _, p := range procs {
		if p != first {
			survivors = append(survivors, p)
		}
	}
	var leader *replicaProc
	waitFor("a new leader", func() bool { leader = leaderOf(survivors); return leader != nil })
	waitFor("a write after the kill", func() bool { return afterKill.Load() > 0 })
	t.Logf("leader %s killed; %s leads; writes acknowledged again after %v", first.id, leader.id, time.Since(killedAt).Round(time.Millisecond))
	time.Sleep(time.Second)
	stop.Store(true)
	wg.Wait()

	// Read each survivor's own copy: READONLY, or the router sends the
	// follower's reads to the leader (MOVED).
	for _, p := range survivors {
		p.rdb.Close()
		p.rdb = redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1,
			OnConnect: func(ctx context.Context, cn *redis.Conn) error { return cn.Do(ctx, "READONLY").Err() }})
	}
	// Caught up: both survivors have applied the leader's last index.
	waitFor("the follower to catch up", func() bool {
		a, b := raftStatus(survivors[0].rdb), raftStatus(survivors[1].rdb)
		return a != nil && b != nil && a["applied_index"] == b["applied_index"] && a["applied_index"] == a["raft_last_log_index"]
	})
	var scans [2]string
	for i, p := range survivors {
		var cursor any = "0"
		for {
			v, err := p.rdb.Do(ctx, "MEM.SCAN", "k", cursor, "COUNT", 1000).Slice()
			if err != nil {
				t.Fatal(err)
			}
			scans[i] += fmt.Sprint(v[1])
			if cursor = v[0]; cursor == "0" {
				break
			}
		}
	}
	if scans[0] != scans[1] {
		t.Fatalf("survivors differ:\n%.2000s\n%.2000s", scans[0], scans[1])
	}
	adds, rewards := 0, 0
	for _, tl := range tallies {
		for _, id := range tl.added {
			adds++
			rewards += tl.acked[id]
			for _, p := range survivors {
				v, err := p.rdb.Do(ctx, "MEM.GET", "k", id).Slice()
				if err != nil {
					t.Fatalf("%s: acknowledged memory %d: %v", p.id, id, err)
				}
				visits := -1
				for j := 0; j+1 < len(v); j += 2 {
					if v[j] == "visits" {
						visits = int(v[j+1].(int64))
					}
				}
				if visits < tl.acked[id] || visits > tl.tried[id] {
					t.Fatalf("%s: memory %d has %d visits; %d rewards acknowledged, %d sent", p.id, id, visits, tl.acked[id], tl.tried[id])
				}
			}
		}
	}
	t.Logf("%d adds and %d rewards acknowledged, all on both survivors", adds, rewards)
}
