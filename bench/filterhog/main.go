// Command filterhog measures what read-only clients looping on an
// expensive filter cost the other clients of a running memrl server
// (issue 26, item 3): the latency of adds to the same collection, and of
// PINGs on another connection, first with no hog (quiet), then while
// --hogs connections loop on MEM.COUNT, MEM.SCAN or MEM.RETRIEVE with a
// filter of about 3.6 KiB that no memory matches cheaply (a balanced sum
// of 512 products of one field: some microseconds a memory).
//
//	go run ./bench/filterhog --addr 127.0.0.1:7399 --n 100000 --hogs 3 --read count
//
// It fills the collection "filterhog" (dropped first) with --n memories of
// DIM --dim and attributes {"a":3,"i":i}. The adder adds a memory every
// --every on its own connection; the pinger sends PING every --every on
// another. Every loop ends with its phase; only loopback addresses are
// accepted.
//
// Two more hogs (issue 26, item 3, the unstepped paths): --read exact
// loops on an unfiltered MEM.RETRIEVE (K1 --k1) of a collection created
// with INDEX FLAT, an exact scan of every row; --read delfilter loops on
// MEM.DEL … FILTER with the expensive filter ending in "and .i == -5",
// which matches nothing (so every DEL evaluates it on every memory and
// deletes none).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"math/rand"
	"net"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:7399", "server address (loopback only)")
	n := flag.Int("n", 100000, "memories in the collection")
	dim := flag.Int("dim", 16, "vector dimension")
	hogs := flag.Int("hogs", 3, "connections looping on the filtered read")
	read := flag.String("read", "count", "the hogs' read: count, scan, retrieve, exact (unfiltered, INDEX FLAT) or delfilter")
	k1 := flag.Int("k1", 10, "K1 of --read exact")
	flag.BoolVar(&noFill, "nofill", false, "use the collection as it is (filled by an earlier run, perhaps of another build)")
	quiet := flag.Duration("quiet", 3*time.Second, "phase without hogs")
	attack := flag.Duration("duration", 20*time.Second, "phase with hogs")
	every := flag.Duration("every", 20*time.Millisecond, "pause between two adds, and between two PINGs")
	flag.Parse()
	host, _, err := net.SplitHostPort(*addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		log.Fatalf("filterhog: %q is not a loopback address", *addr)
	}
	hogK1 = *k1
	if err := run(*addr, *n, *dim, *hogs, *read, *quiet, *attack, *every); err != nil {
		log.Fatal(err)
	}
}

const coll = "filterhog"

var hogK1 = 10 // K1 of --read exact

var noFill bool // --nofill

func dial(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1, ReadTimeout: 5 * time.Minute, WriteTimeout: time.Minute, DialTimeout: 10 * time.Second, MaxRetries: -1})
}

// costly is the filter's expensive part, as in engine/steps_test.go.
func costly(n int) string {
	var rec func(lo, hi int) string
	rec = func(lo, hi int) string {
		if hi-lo == 1 {
			return fmt.Sprintf(".a*%d", lo%7+1)
		}
		m := (lo + hi) / 2
		return "(" + rec(lo, m) + "+" + rec(m, hi) + ")"
	}
	return rec(0, n)
}

func vecArgs(rng *rand.Rand, dim int) []any {
	a := []any{"VALUES", dim}
	for j := 0; j < dim; j++ {
		a = append(a, fmt.Sprintf("%.4f", rng.Float64()-0.5))
	}
	return a
}

func run(addr string, n, dim, hogs int, read string, quiet, attack, every time.Duration) error {
	ctx := context.Background()
	rdb := dial(addr)
	defer rdb.Close()
	t0 := time.Now()
	if !noFill {
		if err := fill(ctx, rdb, n, dim, read); err != nil {
			return err
		}
	}
	rng := rand.New(rand.NewSource(1))
	expr := costly(512) + " > 0 and .i % 1000 == 7"
	if read == "delfilter" {
		expr = costly(512) + " > 0 and .i == -5"
	}
	filled := fmt.Sprintf("filled %d memories (dim %d) in %v", n, dim, time.Since(t0).Round(time.Millisecond))
	if noFill {
		filled = "not filled (--nofill)"
	}
	fmt.Printf("%s; filter %d bytes; hogs %d x MEM.%s\n", filled, len(expr), hogs, strings.ToUpper(read))
	st := time.Now()
	if err := hogRead(ctx, rdb, read, expr, dim, rng); err != nil {
		return err
	}
	fmt.Printf("one %s alone: %v\n", read, time.Since(st).Round(time.Millisecond))

	for _, ph := range []struct {
		name string
		hogs int
		d    time.Duration
	}{{"quiet", 0, quiet}, {"hogs", hogs, attack}} {
		end := time.Now().Add(ph.d)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var adds, pings, reads []time.Duration
		var errs []error
		record := func(to *[]time.Duration, d time.Duration, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			*to = append(*to, d)
		}
		for h := 0; h < ph.hogs; h++ {
			wg.Add(1)
			go func(seed int64) {
				defer wg.Done()
				c := dial(addr)
				defer c.Close()
				rng := rand.New(rand.NewSource(seed))
				for time.Now().Before(end) {
					t := time.Now()
					err := hogRead(ctx, c, read, expr, dim, rng)
					record(&reads, time.Since(t), err)
				}
			}(int64(h + 10))
		}
		wg.Add(2)
		go func() { // adder
			defer wg.Done()
			c := dial(addr)
			defer c.Close()
			rng := rand.New(rand.NewSource(2))
			for time.Now().Before(end) {
				args := append([]any{"MEM.ADD", coll}, vecArgs(rng, dim)...)
				args = append(args, "ATTRS", `{"a":1,"i":-1}`)
				t := time.Now()
				err := c.Do(ctx, args...).Err()
				record(&adds, time.Since(t), err)
				time.Sleep(every)
			}
		}()
		go func() { // pinger
			defer wg.Done()
			c := dial(addr)
			defer c.Close()
			for time.Now().Before(end) {
				t := time.Now()
				err := c.Ping(ctx).Err()
				record(&pings, time.Since(t), err)
				time.Sleep(every)
			}
		}()
		wg.Wait()
		fmt.Printf("%-5s %5.1fs  MEM.ADD %s  PING %s", ph.name, ph.d.Seconds(), pct(adds), pct(pings))
		if ph.hogs > 0 {
			fmt.Printf("  hog reads %s", pct(reads))
		}
		fmt.Printf("  errors %d\n", len(errs))
		for i, err := range errs {
			if i == 3 {
				break
			}
			fmt.Fprintln(os.Stderr, "  error:", err)
		}
	}
	return nil
}

// fill drops the collection and fills it with n memories of dimension dim.
func fill(ctx context.Context, rdb *redis.Client, n, dim int, read string) error {
	rdb.Do(ctx, "MEM.DROP", coll) // absent is fine
	create := []any{"MEM.CREATE", coll, "DIM", dim}
	if read == "exact" {
		create = append(create, "INDEX", "FLAT")
	}
	if err := rdb.Do(ctx, create...).Err(); err != nil {
		return fmt.Errorf("create: %w", err)
	}
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < n; {
		args := []any{"MEM.MADD", coll}
		for j := 0; j < 1000 && i < n; j, i = j+1, i+1 {
			args = append(args, vecArgs(rng, dim)...)
			args = append(args, "ATTRS", fmt.Sprintf(`{"a":3,"i":%d}`, i))
		}
		if err := rdb.Do(ctx, args...).Err(); err != nil {
			return fmt.Errorf("fill: %w", err)
		}
	}
	return nil
}

// hogRead is one filtered read of the collection.
func hogRead(ctx context.Context, c *redis.Client, read, expr string, dim int, rng *rand.Rand) error {
	switch read {
	case "count":
		return c.Do(ctx, "MEM.COUNT", coll, "FILTER", expr).Err()
	case "scan":
		return c.Do(ctx, "MEM.SCAN", coll, "0", "COUNT", 1000, "FILTER", expr).Err()
	case "retrieve":
		args := append([]any{"MEM.RETRIEVE", coll}, vecArgs(rng, dim)...)
		return c.Do(ctx, append(args, "K1", 10, "FILTER", expr)...).Err()
	case "exact":
		args := append([]any{"MEM.RETRIEVE", coll}, vecArgs(rng, dim)...)
		return c.Do(ctx, append(args, "K1", hogK1, "K2", 10)...).Err()
	case "delfilter":
		return c.Do(ctx, "MEM.DEL", coll, "FILTER", expr).Err()
	}
	return fmt.Errorf("unknown read %q", read)
}

// pct formats n, p50, p99 and max.
func pct(ds []time.Duration) string {
	if len(ds) == 0 {
		return "n 0"
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	q := func(p float64) time.Duration { return ds[min(len(ds)-1, int(p*float64(len(ds))))] }
	r := func(d time.Duration) string { return d.Round(10 * time.Microsecond).String() }
	return fmt.Sprintf("n %d p50 %s p99 %s max %s", len(ds), r(q(0.5)), r(q(0.99)), r(ds[len(ds)-1]))
}
