// Command compact measures compaction (issue 10, bench/README.md
// "Maintenance (issue 10)", "Compaction") in process: it fills a
// collection from a TEXMEX file (sift1m-deb base.bvecs), waits for its
// IVF-PQ index, measures disk use, retrieval QPS and recall@10 (against the
// exact scan of the same collection), deletes every other memory,
// measures again, compacts while writers add and reward (their latency
// percentiles before and during the compaction), measures after, and
// after a restart.
//
//	go run ./bench/compact -base ../shared/data/sift1m-deb/base.bvecs -query ../shared/data/sift1m-deb/query.bvecs
package main

import (
	"flag"
	"fmt"
	"log"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/memrl/memrl/bench/ann"
	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/wal"
)

func main() {
	base := flag.String("base", "", "base vectors (.bvecs/.fvecs)")
	query := flag.String("query", "", "query vectors (.bvecs/.fvecs)")
	n := flag.Int("n", 0, "base vectors to load (0: all)")
	nq := flag.Int("queries", 200, "queries for QPS and recall")
	dir := flag.String("dir", "", "database folder (default: a temporary one, removed at the end)")
	payload := flag.Int("payload", 64, "payload bytes per memory")
	writers := flag.Int("writers", 2, "writer goroutines during the compaction (adds and rewards, SyncAlways)")
	flag.Parse()
	if *base == "" || *query == "" {
		log.Fatal("-base and -query are required")
	}
	if err := run(*base, *query, *n, *nq, *dir, *payload, *writers); err != nil {
		log.Fatal(err)
	}
}

// du returns the bytes the folder's files occupy on disk (allocated
// blocks, so sparse files count what they hold).
func du(dir string) int64 {
	var total int64
	filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				total += st.Blocks * 512
			}
		}
		return nil
	})
	return total
}

func mb(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/1e6) }

func run(basePath, queryPath string, n, nq int, dir string, payloadLen, writers int) error {
	x, rows, dim, err := ann.ReadVectors(basePath, n)
	if err != nil {
		return err
	}
	q, qn, _, err := ann.ReadVectors(queryPath, nq)
	if err != nil {
		return err
	}
	if dir == "" {
		if dir, err = os.MkdirTemp("", "memrl-compact-bench-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	opts := engine.Options{Sync: wal.SyncAlways, CheckpointInterval: -1, CompactShare: -1,
		Logf: func(f string, a ...any) { log.Printf(f, a...) }}
	db, err := engine.Open(dir, opts)
	if err != nil {
		return err
	}
	cfg := engine.NewConfig(dim)
	cfg.Metric = engine.L2
	cfg.Index.TrainThreshold = rows // one training, on the whole collection
	if err := db.Create("sift", cfg); err != nil {
		return err
	}
	c, _ := db.Collection("sift")
	start := time.Now()
	pay := make([]byte, payloadLen)
	const batch = 1000
	for i := 0; i < rows; i += batch {
		reqs := make([]engine.AddRequest, 0, batch)
		for j := i; j < min(i+batch, rows); j++ {
			reqs = append(reqs, engine.AddRequest{Vector: x[j*dim : (j+1)*dim], Payload: pay, ID: uint64(j + 1), HasID: true})
		}
		if _, err := c.AddBatch(reqs); err != nil {
			return err
		}
	}
	log.Printf("loaded %d vectors of %d dimensions in %v", rows, dim, time.Since(start).Round(time.Second))
	waitIndexed(c)
	log.Printf("index built %v after the start", time.Since(start).Round(time.Second))
	if err := db.Checkpoint(); err != nil {
		return err
	}
	queries := make([][]float32, qn)
	for i := range queries {
		queries[i] = q[i*dim : (i+1)*dim]
	}
	report := func(what string, c *engine.Collection) {
		qps, recall := measure(c, queries)
		in, _ := c.Info()
		fmt.Printf("%-26s memories %8d rows %8d  du: collection %10s, all %10s  disk_bytes %10s  QPS %6.0f  recall@10 %.3f\n",
			what, in.Count, in.Rows, mb(du(filepath.Join(dir, "collections"))), mb(du(dir)), mb(c.DiskBytes()), qps, recall)
	}
	report("full", c)

	var del []uint64
	for id := uint64(2); id <= uint64(rows); id += 2 {
		del = append(del, id)
	}
	start = time.Now()
	for i := 0; i < len(del); i += 10000 {
		if _, err := c.Delete(del[i:min(i+10000, len(del))]); err != nil {
			return err
		}
	}
	log.Printf("deleted %d memories in %v", len(del), time.Since(start).Round(time.Millisecond))
	if err := db.Checkpoint(); err != nil {
		return err
	}
	report("half deleted", c)

	// Writers: adds (new ids) and rewards (of live odd ids), one at a time,
	// each acknowledged once fsynced.
	var (
		mu       sync.Mutex
		lat      []time.Duration
		base     []time.Duration
		stop     = make(chan struct{})
		wg       sync.WaitGroup
		nextID   atomic.Uint64
		failures atomic.Int64
	)
	nextID.Store(uint64(rows) + 1)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(w)))
			for {
				select {
				case <-stop:
					return
				default:
				}
				t0 := time.Now()
				var err error
				if rng.Intn(2) == 0 {
					r := rng.Intn(rows)
					_, err = c.Add(engine.AddRequest{Vector: x[r*dim : (r+1)*dim], Payload: pay, ID: nextID.Add(1), HasID: true})
				} else {
					id := uint64(2*rng.Intn(rows/2) + 1)
					_, err = c.Reward(1, []uint64{id}, nil)
				}
				d := time.Since(t0)
				if err != nil {
					failures.Add(1)
					continue
				}
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			}
		}(w)
	}
	time.Sleep(10 * time.Second)
	mu.Lock()
	base, lat = lat, nil
	mu.Unlock()
	st, err := c.Compact()
	if err != nil {
		return err
	}
	mu.Lock()
	during := lat
	mu.Unlock()
	close(stop)
	wg.Wait()
	fmt.Printf("compaction: rows %d -> %d, disk_bytes %s -> %s, took %v, write lock held %v, writers held %v\n",
		st.RowsBefore, st.RowsAfter, mb(st.BytesBefore), mb(st.BytesAfter), st.Took.Round(time.Millisecond), st.Stall.Round(time.Millisecond),
		st.WriteStall.Round(time.Millisecond))
	fmt.Printf("writers (%d goroutines, add or reward, SyncAlways): before: %s; during the compaction: %s; failures %d\n",
		writers, pct(base), pct(during), failures.Load())
	if err := db.Checkpoint(); err != nil {
		return err
	}
	report("compacted", c)
	start = time.Now()
	if err := db.Close(); err != nil {
		return err
	}
	db, err = engine.Open(dir, opts)
	if err != nil {
		return err
	}
	defer db.Close()
	c, _ = db.Collection("sift")
	waitIndexed(c)
	log.Printf("restart took %v", time.Since(start).Round(time.Millisecond))
	report("compacted, after restart", c)
	return nil
}

func waitIndexed(c *engine.Collection) {
	for {
		in, _ := c.Info()
		if strings.HasPrefix(in.Index, "ivfpq") && !strings.Contains(in.Index, "(retraining)") {
			return
		}
		time.Sleep(time.Second)
	}
}

// measure returns the QPS of retrievals through the index (one goroutine)
// and their recall@10 against the exact scan.
func measure(c *engine.Collection, queries [][]float32) (float64, float64) {
	opt := engine.NewRetrieveOptions()
	opt.K1, opt.K2, opt.Lambda = 10, 10, 0
	exact := make([][]uint64, len(queries))
	opt.Path = engine.PathExact
	for i, q := range queries {
		res, err := c.Retrieve(q, opt)
		if err != nil {
			log.Fatal(err)
		}
		for _, r := range res {
			exact[i] = append(exact[i], r.ID)
		}
	}
	opt.Path = engine.PathIndex
	hit, total := 0, 0
	start := time.Now()
	for i, q := range queries {
		res, err := c.Retrieve(q, opt)
		if err != nil {
			log.Fatal(err)
		}
		for _, r := range res {
			if slices.Contains(exact[i], r.ID) {
				hit++
			}
		}
		total += len(exact[i])
	}
	return float64(len(queries)) / time.Since(start).Seconds(), float64(hit) / float64(total)
}

func pct(d []time.Duration) string {
	if len(d) == 0 {
		return "no operations"
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	p := func(f float64) time.Duration { return d[min(int(f*float64(len(d))), len(d)-1)] }
	return fmt.Sprintf("%d ops, p50 %v p99 %v max %v", len(d), p(0.5).Round(time.Microsecond), p(0.99).Round(time.Microsecond), d[len(d)-1].Round(time.Microsecond))
}
