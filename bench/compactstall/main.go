// Command compactstall measures what a compaction costs the other clients
// of a memrl server (issue 26, item 5): how long reads of the compacted
// collection (MEM.GET, MEM.RETRIEVE) and other clients' PINGs wait while
// it runs.
//
//	go run ./bench/compactstall -addr 127.0.0.1:PORT -mode load -n 200000 -keep 100 -ttl 30 -snapshot
//	go run ./bench/compactstall -addr 127.0.0.1:PORT -mode probe -dur 30s
//	go run ./bench/compactstall -addr 127.0.0.1:PORT -mode load -n 1300000 -delete 300000
//	go run ./bench/compactstall -addr 127.0.0.1:PORT -mode compact
//
// load creates collection "stall" (FLAT, so no index build competes for
// the CPU) and adds n memories with a TTL of ttl seconds (0: none) and
// keep more without one, MADD of 1,000 at a time; -snapshot takes a
// snapshot right after, which then pins the expiring memories; -delete
// deletes that many of the first memories. probe runs one client each of
// PING, MEM.GET and MEM.RETRIEVE (and with -writer MEM.ADD), one command
// at a time, for dur, and
// counts the compactions it sees start (MEM.INFO compacting, polled every
// 50 ms). compact starts MEM.COMPACT and probes until it ends. Every loop
// is bounded in time; the server must be on loopback.
package main

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"math/rand"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

const coll = "stall"

// live and writer are -live and -writer.
var (
	live   int64
	writer bool
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6380", "server address (loopback)")
	mode := flag.String("mode", "probe", "load, probe or compact")
	n := flag.Int("n", 200000, "load: memories with a TTL (or all, with -ttl 0)")
	keep := flag.Int("keep", 0, "load: memories without a TTL, added after")
	ttl := flag.Int("ttl", 0, "load: TTL of the n memories, seconds (0: none)")
	del := flag.Int("delete", 0, "load: delete the first this many memories")
	snap := flag.Bool("snapshot", false, "load: take snapshot \"pin\" after the adds")
	dim := flag.Int("dim", 32, "load: vector dimension")
	dur := flag.Duration("dur", 30*time.Second, "probe: how long; compact: the longest wait")
	flag.BoolVar(&writer, "writer", false, "probe: add a client of MEM.ADD (one at a time)")
	flag.Int64Var(&live, "live", 0, "probe: MEM.GET picks among the last this many ids (0: the collection's count)")
	flag.Parse()
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: *addr, Protocol: 2, PoolSize: 8, ReadTimeout: 60 * time.Second, MaxRetries: -1})
	defer rdb.Close()
	var err error
	switch *mode {
	case "load":
		err = load(ctx, rdb, *n, *keep, *ttl, *del, *dim, *snap)
	case "probe":
		err = probe(ctx, *addr, *dur, nil)
	case "compact":
		err = compact(ctx, rdb, *addr, *dur)
	default:
		err = fmt.Errorf("unknown mode %q", *mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "compactstall:", err)
		os.Exit(1)
	}
}

func blob(rng *rand.Rand, dim int) []byte {
	b := make([]byte, 4*dim)
	for i := 0; i < dim; i++ {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(rng.Float32()))
	}
	return b
}

func load(ctx context.Context, rdb *redis.Client, n, keep, ttl, del, dim int, snap bool) error {
	start := time.Now()
	rdb.Do(ctx, "MEM.DROP", coll) // may not exist
	if err := rdb.Do(ctx, "MEM.CREATE", coll, "DIM", dim, "METRIC", "L2", "INDEX", "FLAT").Err(); err != nil {
		return err
	}
	rng := rand.New(rand.NewSource(1))
	add := func(count, ttl int) error {
		for done := 0; done < count; {
			m := min(1000, count-done)
			args := []any{"MEM.MADD", coll}
			for i := 0; i < m; i++ {
				args = append(args, "FP32", blob(rng, dim))
				if ttl > 0 {
					args = append(args, "TTL", ttl)
				}
			}
			if err := rdb.Do(ctx, args...).Err(); err != nil {
				return err
			}
			done += m
		}
		return nil
	}
	if err := add(n, ttl); err != nil {
		return err
	}
	if err := add(keep, 0); err != nil {
		return err
	}
	if snap {
		if err := rdb.Do(ctx, "MEM.SNAPSHOT", coll, "pin").Err(); err != nil {
			return err
		}
	}
	for id := 1; id <= del; {
		args := []any{"MEM.DEL", coll}
		for j := 0; j < 1000 && id <= del; j++ {
			args = append(args, id)
			id++
		}
		if err := rdb.Do(ctx, args...).Err(); err != nil {
			return err
		}
	}
	fmt.Printf("loaded %d (+%d kept, ttl %d s, %d deleted, snapshot %v) in %v\n", n, keep, ttl, del, snap, time.Since(start).Round(time.Millisecond))
	return nil
}

// series collects one client's latencies.
type series struct {
	name string
	lat  []time.Duration
	errs int
}

func (s *series) report() {
	if len(s.lat) == 0 {
		fmt.Printf("%-13s no replies, %d errors\n", s.name, s.errs)
		return
	}
	slices.Sort(s.lat)
	q := func(p float64) time.Duration { return s.lat[min(len(s.lat)-1, int(p*float64(len(s.lat))))] }
	fmt.Printf("%-13s n=%-7d p50=%-9v p99=%-9v p99.9=%-9v max=%-9v >500ms=%d errors=%d\n", s.name, len(s.lat),
		q(0.5).Round(10*time.Microsecond), q(0.99).Round(10*time.Microsecond), q(0.999).Round(10*time.Microsecond),
		s.lat[len(s.lat)-1].Round(time.Millisecond), countOver(s.lat, 500*time.Millisecond), s.errs)
}

func countOver(lat []time.Duration, d time.Duration) int {
	n := 0
	for _, l := range lat {
		if l > d {
			n++
		}
	}
	return n
}

// probe runs the PING, GET and RETRIEVE clients until dur passes or done
// (if not nil) is closed, and reports.
func probe(ctx context.Context, addr string, dur time.Duration, done <-chan struct{}) error {
	newConn := func() *redis.Client {
		return redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, PoolSize: 1, ReadTimeout: 120 * time.Second, MaxRetries: -1})
	}
	info := newConn()
	defer info.Close()
	vals, err := info.Do(ctx, "MEM.INFO", coll).Slice()
	if err != nil {
		return err
	}
	fields := map[string]any{}
	for i := 0; i+1 < len(vals); i += 2 {
		fields[fmt.Sprint(vals[i])] = vals[i+1]
	}
	dim := int(fields["dim"].(int64))
	// The live memories are the last count added (load deletes, and
	// expires, the first ones).
	nextID, count := fields["next_id"].(int64), fields["count"].(int64)
	if live > 0 {
		count = live
	}
	if count < 1 {
		return fmt.Errorf("collection %q is empty", coll)
	}
	fmt.Printf("collection: count %v rows %v deleted_rows %v pinned_rows %v\n", fields["count"], fields["rows"], fields["deleted_rows"], fields["pinned_rows"])

	ctx, cancel := context.WithTimeout(ctx, dur)
	defer cancel()
	if done != nil {
		go func() {
			select {
			case <-done:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	var wg sync.WaitGroup
	run := func(s *series, cmd func(c *redis.Client, rng *rand.Rand) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := newConn()
			defer c.Close()
			rng := rand.New(rand.NewSource(int64(len(s.name))))
			for ctx.Err() == nil {
				t := time.Now()
				err := cmd(c, rng)
				if ctx.Err() != nil && err != nil {
					break
				}
				if err != nil && err != redis.Nil {
					s.errs++
					continue
				}
				s.lat = append(s.lat, time.Since(t))
			}
		}()
	}
	ping := &series{name: "PING"}
	get := &series{name: "MEM.GET"}
	ret := &series{name: "MEM.RETRIEVE"}
	bg := context.Background() // a command under way is timed to its end
	run(ping, func(c *redis.Client, _ *rand.Rand) error { return c.Do(bg, "PING").Err() })
	run(get, func(c *redis.Client, rng *rand.Rand) error {
		return c.Do(bg, "MEM.GET", coll, nextID-1-rng.Int63n(count)).Err()
	})
	run(ret, func(c *redis.Client, rng *rand.Rand) error {
		return c.Do(bg, "MEM.RETRIEVE", coll, "FP32", blob(rng, dim), "K1", 10, "K2", 5).Err()
	})
	add := &series{name: "MEM.ADD"}
	if writer {
		run(add, func(c *redis.Client, rng *rand.Rand) error {
			return c.Do(bg, "MEM.ADD", coll, "FP32", blob(rng, dim)).Err()
		})
	}
	var compactions, polls, compactingPolls atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		was := false
		for ctx.Err() == nil {
			v, err := info.Do(bg, "MEM.INFO", coll).Slice()
			if err == nil {
				for i := 0; i+1 < len(v); i += 2 {
					if v[i] == "compacting" {
						now := v[i+1] == int64(1)
						if now && !was {
							compactions.Add(1)
						}
						if now {
							compactingPolls.Add(1)
						}
						was = now
					}
				}
				polls.Add(1)
			}
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	start := time.Now()
	wg.Wait()
	fmt.Printf("probed %v: compactions seen starting %d, compacting in %d of %d polls\n",
		time.Since(start).Round(time.Millisecond), compactions.Load(), compactingPolls.Load(), polls.Load())
	for _, s := range []*series{ping, get, ret} {
		s.report()
	}
	if writer {
		add.report()
	}
	return nil
}

// compact starts a compaction and probes until it ends (or dur passes).
func compact(ctx context.Context, rdb *redis.Client, addr string, dur time.Duration) error {
	done := make(chan struct{})
	res := make(chan error, 1)
	go func() {
		// Let the probes start first.
		time.Sleep(2 * time.Second)
		t := time.Now()
		v, err := rdb.Do(ctx, "MEM.COMPACT", coll, "WAIT").Result()
		fmt.Printf("MEM.COMPACT WAIT: %v in %v\n", v, time.Since(t).Round(time.Millisecond))
		close(done)
		res <- err
	}()
	if err := probe(ctx, addr, dur, done); err != nil {
		return err
	}
	return <-res
}
