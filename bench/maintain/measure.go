package maintain

import (
	"context"
	"errors"
	"io/fs"
	"math"
	"math/rand"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/memrl/memrl/client"
)

// diskUse returns the bytes allocated to the files under dir, as du counts
// them (st_blocks × 512), and their apparent size.
func diskUse(dir string) (allocated, apparent int64, err error) {
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path != dir && errorsIsNotExist(err) {
				return nil // removed while walked (a checkpoint's temporary file)
			}
			return err
		}
		info, err := d.Info()
		if err != nil {
			if errorsIsNotExist(err) {
				return nil
			}
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			allocated += st.Blocks * 512
		}
		if info.Mode().IsRegular() {
			apparent += info.Size()
		}
		return nil
	})
	return allocated, apparent, err
}

func errorsIsNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// latencies summarises a set of command latencies.
type latencies []time.Duration

func (l latencies) pct(p float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	s := slices.Clone(l)
	slices.Sort(s)
	i := min(len(s)-1, max(0, int(math.Ceil(p*float64(len(s))))-1))
	return s[i]
}

// retrieval is what one measure of MEM.RETRIEVE gave.
type retrieval struct {
	Recall10 float64 `json:"recall10"`
	QPS1     float64 `json:"qps_1_client"`
	P50US    float64 `json:"p50_us_1_client"`
	P99US    float64 `json:"p99_us_1_client"`
	QPSN     float64 `json:"qps_n_clients"`
}

var zero = 0.0

// retrieveOpts is MEM.RETRIEVE … K1 10 K2 10 LAMBDA 0: phase 1's order,
// the index's default NPROBE and REFINE.
var retrieveOpts = &client.RetrieveOptions{K1: 10, K2: 10, Lambda: &zero}

// measureRetrieval runs one pass over the queries with one client (recall
// and latency), then clients clients, one query at a time each, for dur
// (QPS).
func measureRetrieval(ctx context.Context, c *client.Client, coll string, queries [][]float32, truth [][]int64, clients int, dur time.Duration) (retrieval, error) {
	var r retrieval
	lat := make(latencies, 0, len(queries))
	h := 0
	start := time.Now()
	for i, q := range queries {
		t0 := time.Now()
		res, err := c.Retrieve(ctx, coll, q, retrieveOpts)
		if err != nil {
			return r, err
		}
		lat = append(lat, time.Since(t0))
		ids := make([]int64, len(res))
		for j, x := range res {
			ids[j] = x.ID
		}
		h += hits(truth[i], ids)
	}
	wall := time.Since(start)
	r.Recall10 = float64(h) / float64(10*len(queries))
	r.QPS1 = float64(len(queries)) / wall.Seconds()
	r.P50US, r.P99US = float64(lat.pct(0.5))/1e3, float64(lat.pct(0.99))/1e3
	var n int64
	var mu sync.Mutex // guards n and firstErr
	var firstErr error
	var wg sync.WaitGroup
	start = time.Now()
	deadline := start.Add(dur)
	for k := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			done := int64(0)
			var err error
			for i := k * len(queries) / clients; time.Now().Before(deadline); i++ {
				if _, err = c.Retrieve(ctx, coll, queries[i%len(queries)], retrieveOpts); err != nil {
					break
				}
				done++
			}
			mu.Lock()
			n += done
			if err != nil && firstErr == nil {
				firstErr = err
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	r.QPSN = float64(n) / time.Since(start).Seconds()
	return r, firstErr
}

// writerStats are the writers' latencies over one window.
type writerStats struct {
	Adds      int     `json:"adds"`
	AddP50US  float64 `json:"add_p50_us"`
	AddP99US  float64 `json:"add_p99_us"`
	Rewards   int     `json:"rewards"`
	RewP50US  float64 `json:"reward_p50_us"`
	RewP99US  float64 `json:"reward_p99_us"`
	Seconds   float64 `json:"seconds"`
	Available bool    `json:"available"`
}

// writers are one MEM.ADD client and one MEM.REWARD client, each sending
// one command at a time until stopped.
type writers struct {
	c       *client.Client
	coll    string
	vecs    func(i int) []float32 // the vectors added, cycled through
	nvecs   int
	targets []int64 // memories rewarded (live throughout)
	rng     *rand.Rand

	mu    sync.Mutex          // guards added
	added map[int64][]float32 // id → vector of every memory the writers added
}

// run runs the writers until stop is closed, and returns their latencies.
// Each writer completes at least one command.
func (w *writers) run(ctx context.Context, stop <-chan struct{}) (writerStats, error) {
	var addLat, rewLat latencies
	var addErr, rewErr error
	seed := w.rng.Int63()
	start := time.Now()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		i := int(seed % int64(w.nvecs))
		// Each writer sends at least one command (the stop check comes
		// after it), so a window shorter than one round trip still has
		// a latency to report rather than none.
		for ; ; i++ {
			v := w.vecs(i % w.nvecs)
			t0 := time.Now()
			id, err := w.c.Add(ctx, w.coll, v, nil)
			if err != nil {
				addErr = err
				return
			}
			addLat = append(addLat, time.Since(t0))
			w.mu.Lock()
			w.added[id] = v
			w.mu.Unlock()
			if stopped(stop) {
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewSource(seed))
		for {
			id := w.targets[rng.Intn(len(w.targets))]
			t0 := time.Now()
			if _, err := w.c.Reward(ctx, w.coll, rng.Float64()*2-1, client.ID(id)); err != nil {
				rewErr = err
				return
			}
			rewLat = append(rewLat, time.Since(t0))
			if stopped(stop) {
				return
			}
		}
	}()
	wg.Wait()
	st := writerStats{Adds: len(addLat), Rewards: len(rewLat), Seconds: time.Since(start).Seconds(), Available: true,
		AddP50US: float64(addLat.pct(0.5)) / 1e3, AddP99US: float64(addLat.pct(0.99)) / 1e3,
		RewP50US: float64(rewLat.pct(0.5)) / 1e3, RewP99US: float64(rewLat.pct(0.99)) / 1e3}
	if addErr != nil {
		return st, addErr
	}
	return st, rewErr
}

// stopped reports whether stop is closed, without waiting.
func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}
