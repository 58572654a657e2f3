// Package madd measures how fast a memrl server takes memories over the
// protocol: MEM.MADD batches against pipelined MEM.ADDs, each acknowledged
// (durable per the server's --sync policy). It loads N memories into a
// fresh collection per table row, from the SIFT base set or random
// vectors. Run it as `memrl bench madd`.
package madd

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/memrl/memrl/bench/rewards"
	"github.com/memrl/memrl/internal/cliflag"
)

// Main runs the benchmark with command-line args, writing the table to out.
func Main(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("bench madd", flag.ContinueOnError)
	addr := fs.String("addr", "", "server to measure; empty starts `memrl serve` on a temporary folder per sync policy")
	syncs := fs.String("sync", "always,none", "sync policies of the started servers, comma-separated")
	memories := fs.Int("memories", 1000000, "memories loaded per row")
	dim := fs.Int("dim", 128, "vector dimension of random vectors (a base file sets its own)")
	base := fs.String("base", "", "vectors to load: a TEXMEX .bvecs or .fvecs file (e.g. sift1m-deb/base.bvecs); empty: random")
	batches := fs.String("batch", "100,1000", "memories per MEM.MADD (and MEM.ADDs per pipeline), comma-separated")
	modes := fs.String("mode", "madd,add", "madd (one MEM.MADD per round trip) and/or add (a pipeline of MEM.ADD per round trip)")
	clients := fs.Int("clients", 1, "concurrent connections, each loading its share")
	payload := fs.Int("payload", 0, "payload bytes per memory")
	index := fs.String("index", "FLAT", "the collection's INDEX: FLAT, or IVFPQ to include background index builds in the load")
	if err := cliflag.Parse(fs, args, 0); err != nil {
		return err
	}
	sizes, err := parseInts(*batches)
	if err != nil {
		return err
	}
	blobs, d, err := loadVectors(*base, *memories, *dim)
	if err != nil {
		return err
	}
	src := "random"
	if *base != "" {
		src = *base
	}
	fmt.Fprintf(out, "# %d memories of dim %d (%s), payload %d B, %d client(s), INDEX %s\n", len(blobs), d, src, *payload, *clients, *index)
	fmt.Fprintf(out, "%-8s %-5s %6s %12s %9s %10s %10s\n", "sync", "mode", "batch", "memories/s", "seconds", "p50_ms", "p99_ms")
	policies := strings.Split(*syncs, ",")
	if *addr != "" {
		policies = []string{"(server)"}
	}
	pay := strings.Repeat("p", *payload)
	for _, policy := range policies {
		for _, mode := range strings.Split(*modes, ",") {
			if mode != "madd" && mode != "add" {
				return cliflag.Usagef("unknown mode %q: madd or add", mode)
			}
			for _, b := range sizes {
				// A fresh server per row, so that every row starts from an
				// empty log and cold files.
				a := *addr
				var stop func()
				if a == "" {
					if a, stop, err = rewards.StartServer(policy); err != nil {
						return err
					}
				}
				r, err := load(a, d, *index, blobs, pay, mode, b, *clients)
				if stop != nil {
					stop()
				}
				if err != nil {
					return err
				}
				fmt.Fprintf(out, "%-8s %-5s %6d %12.0f %9.1f %10.2f %10.2f\n", policy, mode, b, r.rate, r.secs, r.p50, r.p99)
			}
		}
	}
	return nil
}

type result struct{ rate, secs, p50, p99 float64 }

// load creates a collection and sends every blob to it, batch memories
// per round trip, from clients connections, and times it.
func load(addr string, dim int, index string, blobs [][]byte, pay, mode string, batch, clients int) (result, error) {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: clients + 1, ReadTimeout: time.Minute, WriteTimeout: time.Minute})
	defer rdb.Close()
	coll := fmt.Sprintf("bench_madd_%d", time.Now().UnixNano())
	if err := rdb.Do(ctx, "MEM.CREATE", coll, "DIM", dim, "METRIC", "L2", "INDEX", index).Err(); err != nil {
		return result{}, err
	}
	defer rdb.Do(ctx, "MEM.DROP", coll)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		lats  []time.Duration
		first error
	)
	start := time.Now()
	per := (len(blobs) + clients - 1) / clients
	for w := 0; w < clients; w++ {
		part := blobs[min(w*per, len(blobs)):min((w+1)*per, len(blobs))]
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn := rdb.Conn()
			defer conn.Close()
			var my []time.Duration
			for i := 0; i < len(part); i += batch {
				chunk := part[i:min(i+batch, len(part))]
				t0 := time.Now()
				var err error
				if mode == "madd" {
					args := make([]any, 0, 2+4*len(chunk))
					args = append(args, "MEM.MADD", coll)
					for _, b := range chunk {
						args = append(args, "FP32", b)
						if pay != "" {
							args = append(args, "PAYLOAD", pay)
						}
					}
					err = conn.Do(ctx, args...).Err()
				} else {
					p := conn.Pipeline()
					for _, b := range chunk {
						if pay != "" {
							p.Do(ctx, "MEM.ADD", coll, "FP32", b, "PAYLOAD", pay)
						} else {
							p.Do(ctx, "MEM.ADD", coll, "FP32", b)
						}
					}
					_, err = p.Exec(ctx)
				}
				if err != nil {
					mu.Lock()
					first = cmpErr(first, err)
					mu.Unlock()
					return
				}
				my = append(my, time.Since(t0))
			}
			mu.Lock()
			lats = append(lats, my...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if first != nil {
		return result{}, first
	}
	n, err := rdb.Do(ctx, "MEM.COUNT", coll).Int64()
	if err != nil {
		return result{}, err
	}
	if n != int64(len(blobs)) {
		return result{}, fmt.Errorf("collection holds %d memories after loading %d", n, len(blobs))
	}
	slices.Sort(lats)
	pct := func(p float64) float64 {
		if len(lats) == 0 {
			return 0
		}
		return float64(lats[int(p*float64(len(lats)-1))].Microseconds()) / 1000
	}
	return result{rate: float64(len(blobs)) / elapsed.Seconds(), secs: elapsed.Seconds(), p50: pct(.5), p99: pct(.99)}, nil
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// loadVectors returns n vectors as FP32 blobs: the first n of a TEXMEX
// file (.bvecs: uint8 components; .fvecs: float32), or random ones of dim
// with a fixed seed.
func loadVectors(path string, n, dim int) ([][]byte, int, error) {
	if path == "" {
		rng := rand.New(rand.NewSource(1))
		out := make([][]byte, n)
		for i := range out {
			b := make([]byte, 4*dim)
			for j := 0; j < dim; j++ {
				binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(rng.Float32()))
			}
			out[i] = b
		}
		return out, dim, nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, err
	}
	elem := 1
	switch {
	case strings.HasSuffix(path, ".bvecs"):
	case strings.HasSuffix(path, ".fvecs"):
		elem = 4
	default:
		return nil, 0, fmt.Errorf("%s: want a .bvecs or .fvecs file", path)
	}
	if len(raw) < 4 {
		return nil, 0, fmt.Errorf("%s: empty", path)
	}
	d := int(binary.LittleEndian.Uint32(raw))
	rec := 4 + d*elem
	if d < 1 || len(raw)%rec != 0 {
		return nil, 0, fmt.Errorf("%s: not a TEXMEX file of dimension %d", path, d)
	}
	if have := len(raw) / rec; have < n {
		return nil, 0, fmt.Errorf("%s holds %d vectors, fewer than the %d asked for", path, have, n)
	}
	out := make([][]byte, n)
	for i := range out {
		r := raw[i*rec+4 : (i+1)*rec]
		b := make([]byte, 4*d)
		for j := 0; j < d; j++ {
			var f float32
			if elem == 1 {
				f = float32(r[j])
			} else {
				f = math.Float32frombits(binary.LittleEndian.Uint32(r[4*j:]))
			}
			binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(f))
		}
		out[i] = b
	}
	return out, d, nil
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, cliflag.Usagef("bad count %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}
