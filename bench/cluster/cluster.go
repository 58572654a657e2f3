// Package cluster measures what replication costs: acknowledged rewards
// per second and latency percentiles on one standalone node against a
// 3-node raft group (package replica) and 2 shards of 3 (memrl cluster
// start, go-redis ClusterClient) on loopback, where the figure is the
// protocol's cost (one round of raft appends and a majority's
// raft-boltdb fsyncs per batch), not a network's; failover time: the
// leader killed with SIGKILL until a write is acknowledged again; and
// the catch-up time of an emptied replica.
// Run it as `memrl bench cluster`.
package cluster

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/memrl/memrl/internal/cliflag"
)

// Main runs the benchmark with command-line args, writing tables to out.
func Main(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("bench cluster", flag.ContinueOnError)
	clients := fs.String("clients", "1,8,32", "concurrent connections, comma-separated")
	dur := fs.Duration("duration", 3*time.Second, "measuring time per row")
	memories := fs.Int("memories", 10000, "memories rewarded (uniformly at random)")
	failovers := fs.Int("failovers", 3, "times the group's leader is killed (0: none)")
	sharded := fs.Bool("sharded", true, "also measure 2 shards x 3 nodes started with memrl cluster start, through go-redis's ClusterClient")
	catchup := fs.Int("catchup", 0, "memories (of --catchup-dim dimensions) of a collection an emptied replica then catches up with from a snapshot (0: skip)")
	catchupDim := fs.Int("catchup-dim", 16, "dimension of the --catchup collection's vectors")
	if err := cliflag.Parse(fs, args, 0); err != nil {
		return err
	}
	var ns []int
	for _, f := range strings.Split(*clients, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return cliflag.Usagef("--clients: bad count %q", f)
		}
		ns = append(ns, n)
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "memrl-bench-cluster-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	fmt.Fprintf(out, "%-22s %8s %12s %10s %10s\n", "setup", "clients", "rewards/s", "p50_us", "p99_us")
	// One node, every reward fsynced by its WAL.
	single, err := startProc(exe, dir, "single", "--dir", filepath.Join(dir, "single"), "--sync", "always")
	if err != nil {
		return err
	}
	err = measureRows(out, "1 node, sync always", single.addr, ns, *dur, *memories)
	single.stop()
	if err != nil {
		return err
	}
	// A 3-node group: every reward committed by a majority.
	g, err := startGroup(exe, dir, 3)
	if err != nil {
		return err
	}
	defer g.stop()
	leader, err := g.waitLeader(nil, 30*time.Second)
	if err != nil {
		return err
	}
	if err := measureRows(out, "3-node raft group", leader.addr, ns, *dur, *memories); err != nil {
		return err
	}
	if *sharded {
		if err := measureSharded(out, exe, dir, 2, 3, ns, *dur, *memories); err != nil {
			return err
		}
	}
	if *failovers > 0 {
		fmt.Fprintf(out, "\n%-10s %-8s %-8s %14s\n", "failover", "killed", "leader", "write_after_ms")
	}
	for i := 0; i < *failovers; i++ {
		old, err := g.waitLeader(nil, 30*time.Second)
		if err != nil {
			return err
		}
		took, next, err := g.failover(old)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%-10d %-8s %-8s %14.0f\n", i+1, old.id, next.id, float64(took.Microseconds())/1000)
		if err := g.restart(old); err != nil {
			return err
		}
		if err := g.caughtUp(30 * time.Second); err != nil {
			return err
		}
	}
	if *catchup > 0 {
		return g.catchUp(out, *catchup, *catchupDim)
	}
	return nil
}

// catchUp loads n memories through the leader, snapshots it with the log
// compacted behind, empties a follower's folder and restarts it, and
// reports how long it takes to apply what the leader has.
func (g *group) catchUp(out io.Writer, n, dim int) error {
	ctx := context.Background()
	leader, err := g.waitLeader(nil, 30*time.Second)
	if err != nil {
		return err
	}
	if err := leader.rdb.Do(ctx, "MEM.CREATE", "catchup", "DIM", dim).Err(); err != nil {
		return err
	}
	loadStart := time.Now()
	elections := 0 // batches sent again after a leader change
	const batch = 1000
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < n; i += batch {
		args := []any{"MEM.MADD", "catchup"}
		for j := i; j < min(i+batch, n); j++ {
			// FP32 blobs: a text float per component would triple
			// the bytes of a 128-d load.
			blob := make([]byte, 0, 4*dim)
			for k := 0; k < dim; k++ {
				blob = binary.LittleEndian.AppendUint32(blob, math.Float32bits(rng.Float32()+0.01))
			}
			args = append(args, "FP32", blob)
			args = append(args, "ID", j+1)
		}
		// A batch refused with TRYAGAIN was not applied; one of unknown
		// outcome may have been: its ids then exist. Either way, find
		// the leader and send it again.
		for tries := 0; ; tries++ {
			err := leader.rdb.Do(ctx, args...).Err()
			if err == nil || (tries > 0 && strings.Contains(err.Error(), "exists")) {
				break
			}
			if tries == 20 {
				return fmt.Errorf("loading: %w", err)
			}
			elections++
			if leader, err = g.waitLeader(nil, 30*time.Second); err != nil {
				return err
			}
		}
	}
	loaded := time.Since(loadStart)
	// Every node snapshots and compacts its log, so that whichever leads
	// when the emptied replica returns must send it a snapshot.
	if err := g.caughtUp(5 * time.Minute); err != nil {
		return err
	}
	snapStart := time.Now()
	var idx int64
	for _, p := range g.procs {
		// A snapshot of a large state takes longer than a command's
		// default read timeout.
		slow := redis.NewClient(&redis.Options{Addr: p.addr, ReadTimeout: -1, MaxRetries: -1})
		i, err := slow.Do(ctx, "RAFT.SNAPSHOT", "KEEP", 0).Int64()
		slow.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", p.id, err)
		}
		idx = max(idx, i)
	}
	snapTook := time.Since(snapStart) / time.Duration(len(g.procs))
	if leader, err = g.waitLeader(nil, 30*time.Second); err != nil {
		return err
	}
	var f *proc
	for _, p := range g.procs {
		if p != leader {
			f = p
			break
		}
	}
	f.stop()
	os.RemoveAll(f.args[1]) // --dir
	restart := time.Now()
	if err := f.start(); err != nil {
		return err
	}
	for deadline := time.Now().Add(30 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if s := status(f); s != nil {
			if a, _ := strconv.ParseInt(s["applied_index"], 10, 64); a >= idx {
				break
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not catch up", f.id)
		}
	}
	took := time.Since(restart)
	var count int64
	// READONLY: the follower's own copy (else the router sends the read
	// to the leader).
	ro := redis.NewClient(&redis.Options{Addr: f.addr, MaxRetries: -1,
		OnConnect: func(ctx context.Context, cn *redis.Conn) error { return cn.Do(ctx, "READONLY").Err() }})
	defer ro.Close()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if count, err = ro.Do(ctx, "MEM.COUNT", "catchup").Int64(); err == nil && count == int64(n) {
			break
		}
	}
	if count != int64(n) {
		return fmt.Errorf("%s caught up with %d memories, want %d", f.id, count, n)
	}
	fmt.Fprintf(out, "\n%-10s %10s %12s %8s %14s %16s\n", "catch-up", "memories", "load_s", "resent", "snapshot_s", "empty_replica_s")
	fmt.Fprintf(out, "%-10s %10d %12.1f %8d %14.1f %16.1f\n", f.id, n, loaded.Seconds(), elections, snapTook.Seconds(), took.Seconds())
	return nil
}

// proc is one memrl serve process.
type proc struct {
	id, addr string
	args     []string
	exe, log string
	cmd      *exec.Cmd
	done     chan struct{} // closed when cmd has exited
	rdb      *redis.Client
}

func startProc(exe, dir, id string, args ...string) (*proc, error) {
	p := &proc{id: id, exe: exe, log: filepath.Join(dir, id+".log")}
	if p.addr == "" {
		a, err := freeAddr(false)
		if err != nil {
			return nil, err
		}
		p.addr = a
		args = append(args, "--addr", a)
	}
	p.args = args
	return p, p.start()
}

func (p *proc) start() error {
	logf, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	p.cmd = exec.Command(p.exe, append([]string{"serve"}, p.args...)...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	p.done = make(chan struct{})
	go func() { p.cmd.Wait(); logf.Close(); close(p.done) }()
	p.rdb = redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1, PoolSize: 512, DialTimeout: time.Second})
	for deadline := time.Now().Add(30 * time.Second); p.rdb.Ping(context.Background()).Err() != nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			logged, _ := os.ReadFile(p.log)
			return fmt.Errorf("%s did not start:\n%s", p.id, logged)
		}
	}
	return nil
}

func (p *proc) stop() {
	p.rdb.Close()
	p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
}

// freeAddr returns a free loopback address; raft also wants port+10000.
func freeAddr(raft bool) (string, error) {
	for i := 0; i < 200; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		a := ln.Addr().String()
		ln.Close()
		if !raft {
			return a, nil
		}
		port := ln.Addr().(*net.TCPAddr).Port
		if port+10000 > 65535 {
			continue
		}
		l2, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port+10000))
		if err != nil {
			continue
		}
		l2.Close()
		return a, nil
	}
	return "", fmt.Errorf("no free pair of ports")
}

// group is a shard of memrl serve --cluster-nodes processes.
type group struct{ procs []*proc }

func startGroup(exe, dir string, n int) (*group, error) {
	g := &group{}
	nodes := filepath.Join(dir, "nodes.tsv")
	lines := "# memrl nodes v1\n"
	for i := 0; i < n; i++ {
		a, err := freeAddr(true)
		if err != nil {
			return nil, err
		}
		p := &proc{id: fmt.Sprintf("n%d", i+1), addr: a, exe: exe}
		p.log = filepath.Join(dir, p.id+".log")
		p.args = []string{"--dir", filepath.Join(dir, p.id), "--cluster-nodes", nodes, "--node-id", p.id}
		g.procs = append(g.procs, p)
		lines += fmt.Sprintf("%s\t%s\t0\t0\n", p.id, a)
	}
	if err := os.WriteFile(nodes, []byte(lines), 0o644); err != nil {
		return nil, err
	}
	for _, p := range g.procs {
		if err := p.start(); err != nil {
			g.stop()
			return nil, err
		}
	}
	return g, nil
}

func (g *group) stop() {
	for _, p := range g.procs {
		if p.cmd != nil {
			p.stop()
		}
	}
}

// status is a node's RAFT.STATUS, or nil.
func status(p *proc) map[string]string {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	v, err := p.rdb.Do(ctx, "RAFT.STATUS").Slice()
	if err != nil {
		return nil
	}
	m := map[string]string{}
	for i := 0; i+1 < len(v); i += 2 {
		m[fmt.Sprint(v[i])] = fmt.Sprint(v[i+1])
	}
	return m
}

// waitLeader waits for a node other than skip to lead.
func (g *group) waitLeader(skip *proc, within time.Duration) (*proc, error) {
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		for _, p := range g.procs {
			if p != skip && status(p)["role"] == "leader" {
				return p, nil
			}
		}
	}
	return nil, fmt.Errorf("no leader")
}

// failover kills old with SIGKILL and returns how long until a write is
// acknowledged by a new leader.
func (g *group) failover(old *proc) (time.Duration, *proc, error) {
	ctx := context.Background()
	if err := old.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return 0, nil, err
	}
	killed := time.Now()
	for deadline := killed.Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		for _, p := range g.procs {
			if p == old {
				continue
			}
			c, cancel := context.WithTimeout(ctx, time.Second)
			err := p.rdb.Do(c, "MEM.REWARD", "bench", 1, 1).Err()
			cancel()
			if err == nil {
				return time.Since(killed), p, nil
			}
		}
	}
	return 0, nil, fmt.Errorf("no write acknowledged within 60 s of killing %s", old.id)
}

// restart starts p again on its folder (its raft state is kept).
func (g *group) restart(p *proc) error {
	p.rdb.Close()
	<-p.done
	return p.start()
}

// caughtUp waits until every node has applied the same index.
func (g *group) caughtUp(within time.Duration) error {
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		idx := map[string]bool{}
		ok := true
		for _, p := range g.procs {
			s := status(p)
			if s == nil {
				ok = false
				break
			}
			idx[s["applied_index"]] = true
		}
		if ok && len(idx) == 1 {
			return nil
		}
	}
	return fmt.Errorf("replicas did not catch up")
}

// measureRows loads the memories on addr and prints one row per client
// count.
func measureRows(out io.Writer, setup, addr string, ns []int, dur time.Duration, memories int) error {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 512})
	defer rdb.Close()
	if err := rdb.Do(ctx, "MEM.CREATE", "bench", "DIM", 8).Err(); err != nil {
		return err
	}
	for i := 0; i < memories; i += 500 {
		p := rdb.Pipeline()
		for j := i; j < min(i+500, memories); j++ {
			args := []any{"MEM.ADD", "bench", "VALUES", 8}
			for k := 0; k < 8; k++ {
				args = append(args, rand.Float32()+0.01)
			}
			p.Do(ctx, append(args, "ID", j+1)...)
		}
		if _, err := p.Exec(ctx); err != nil {
			return fmt.Errorf("loading memories: %w", err)
		}
	}
	for _, n := range ns {
		rate, p50, p99, err := measure(ctx, rdb, n, dur, memories)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%-22s %8d %12.0f %10.0f %10.0f\n", setup, n, rate, p50, p99)
	}
	return nil
}

// measure runs n connections rewarding one memory at a time for dur.
func measure(ctx context.Context, rdb *redis.Client, n int, dur time.Duration, memories int) (float64, float64, float64, error) {
	return measureLoad(n, dur, func() func(rng *rand.Rand) error {
		conn := rdb.Conn()
		return func(rng *rand.Rand) error {
			if rng == nil { // the worker is done
				return conn.Close()
			}
			return conn.Do(ctx, "MEM.REWARD", "bench", rng.Intn(3), rng.Intn(memories)+1).Err()
		}
	})
}

// measureLoad runs n workers for dur, each calling its request function
// (made by newWorker, called with nil when the worker ends) one request at
// a time, and returns the requests per second and the p50 and p99
// latencies in µs, or the first error a request returned.
func measureLoad(n int, dur time.Duration, newWorker func() func(rng *rand.Rand) error) (float64, float64, float64, error) {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		lats  []time.Duration
		first error
	)
	deadline := time.Now().Add(dur)
	start := time.Now()
	for w := 0; w < n; w++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed))
			do := newWorker()
			defer do(nil)
			var my []time.Duration
			for time.Now().Before(deadline) {
				t0 := time.Now()
				if err := do(rng); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
				my = append(my, time.Since(t0))
			}
			mu.Lock()
			lats = append(lats, my...)
			mu.Unlock()
		}(int64(w) + 1)
	}
	wg.Wait()
	if first != nil {
		return 0, 0, 0, first
	}
	elapsed := time.Since(start)
	sort.Slice(lats, func(i, j int) bool { return lats[i] < lats[j] })
	pct := func(p float64) float64 {
		if len(lats) == 0 {
			return 0
		}
		return float64(lats[int(p*float64(len(lats)-1))].Microseconds())
	}
	return float64(len(lats)) / elapsed.Seconds(), pct(0.5), pct(0.99), nil
}
