// Package rewards measures how many rewards per second a memrl server
// acknowledges, over the line protocol, from many concurrent clients: the
// update half of the learning loop. It prints one table row per client
// count. Run it as `memrl bench rewards`.
package rewards

import (
	"context"
	"flag"
	"fmt"
	"github.com/memrl/memrl/internal/cliflag"
	"io"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/memrl/memrl/client"
)

// Main runs the benchmark with command-line args, writing the table to out.
func Main(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("bench rewards", flag.ContinueOnError)
	addr := fs.String("addr", "", "server to measure; empty starts `memrl serve` on a temporary folder")
	syncs := fs.String("sync", "always,none", "sync policies of the started server, comma-separated")
	clients := fs.String("clients", "1,8,32,64", "concurrent connections, comma-separated")
	pipeline := fs.Int("pipeline", 1, "rewards in flight per connection")
	dur := fs.Duration("duration", 3*time.Second, "measuring time per row")
	memories := fs.Int("memories", 10000, "memories rewarded (uniformly at random)")
	if err := cliflag.Parse(fs, args, 0); err != nil {
		return err
	}
	ns, err := parseInts(*clients)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%-8s %8s %8s %14s %10s %10s\n", "sync", "clients", "pipeline", "rewards/s", "p50_us", "p99_us")
	policies := strings.Split(*syncs, ",")
	if *addr != "" {
		policies = []string{"(server)"}
	}
	for _, policy := range policies {
		a := *addr
		var stop func()
		if a == "" {
			if a, stop, err = StartServer(policy); err != nil {
				return err
			}
		}
		err := runPolicy(out, a, policy, ns, *pipeline, *dur, *memories)
		if stop != nil {
			stop()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func runPolicy(out io.Writer, addr, policy string, ns []int, pipeline int, dur time.Duration, memories int) error {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 512, ContextTimeoutEnabled: true})
	defer rdb.Close()
	c, err := client.New(client.Options{Redis: rdb})
	if err != nil {
		return err
	}
	coll := fmt.Sprintf("bench_rewards_%d", time.Now().UnixNano())
	if err := c.Create(ctx, coll, 8, nil); err != nil {
		return err
	}
	defer c.Drop(ctx, coll)
	// Load the memories, ids 1..memories, in batches of 500.
	for i := 0; i < memories; i += 500 {
		var batch []client.AddItem
		for j := i; j < min(i+500, memories); j++ {
			v := make([]float32, 8)
			for k := range v {
				v[k] = rand.Float32() + 0.01
			}
			batch = append(batch, client.AddItem{Vector: v, AddOptions: client.AddOptions{ID: ptr(int64(j + 1))}})
		}
		if _, err := c.MAdd(ctx, coll, batch); err != nil {
			return fmt.Errorf("loading memories: %w", err)
		}
	}
	for _, n := range ns {
		rate, p50, p99, err := measure(ctx, rdb, coll, n, pipeline, dur, memories)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%-8s %8d %8d %14.0f %10.0f %10.0f\n", policy, n, pipeline, rate, p50, p99)
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// measure runs n connections, each keeping pipeline rewards in flight, for
// dur, and returns acknowledged rewards per second and the p50/p99 latency
// of one round trip in microseconds.
func measure(ctx context.Context, rdb *redis.Client, coll string, n, pipeline int, dur time.Duration, memories int) (float64, float64, float64, error) {
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		lats    []time.Duration
		acked   int64
		firstEr error
	)
	deadline := time.Now().Add(dur)
	start := time.Now()
	for w := 0; w < n; w++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed))
			conn := rdb.Conn()
			defer conn.Close()
			var my []time.Duration
			var myAcked int64
			for time.Now().Before(deadline) {
				t0 := time.Now()
				p := conn.Pipeline()
				for i := 0; i < pipeline; i++ {
					p.Do(ctx, "MEM.REWARD", coll, rng.Intn(3), rng.Intn(memories)+1)
				}
				cmds, err := p.Exec(ctx)
				if err != nil {
					mu.Lock()
					if firstEr == nil {
						firstEr = err
					}
					mu.Unlock()
					return
				}
				my = append(my, time.Since(t0))
				myAcked += int64(len(cmds))
			}
			mu.Lock()
			lats = append(lats, my...)
			acked += myAcked
			mu.Unlock()
		}(int64(w) + 1)
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstEr != nil {
		return 0, 0, 0, firstEr
	}
	sort.Slice(lats, func(i, j int) bool { return lats[i] < lats[j] })
	pct := func(p float64) float64 {
		if len(lats) == 0 {
			return 0
		}
		return float64(lats[int(p*float64(len(lats)-1))].Microseconds())
	}
	return float64(acked) / elapsed.Seconds(), pct(0.50), pct(0.99), nil
}

// StartServer runs this binary's `serve` on a free loopback port and a
// temporary folder with the given --sync policy, and returns its address
// and a function that stops it and removes the folder. The benchmarks of
// other packages (bench/madd) start their servers with it too.
func StartServer(policy string) (string, func(), error) {
	exe, err := os.Executable()
	if err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp("", "memrl-bench-")
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(exe, "serve", "--dir", filepath.Join(dir, "data"), "--addr", addr, "--sync", policy)
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
		os.RemoveAll(dir)
	}
	for i := 0; i < 500; i++ {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return addr, stop, nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	return "", nil, fmt.Errorf("server did not start on %s", addr)
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad count %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}
