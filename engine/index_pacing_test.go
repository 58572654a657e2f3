package engine

import (
	"fmt"
	"math/rand"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/memrl/memrl/wal"
)

// BenchmarkRetrieveDuringBuild measures what an index build does to the
// retrievals served meanwhile: one goroutine per client (1, then 4)
// retrieves in a loop, one query at a time with a pause of clientPause before each (as a server's
// connection goroutine parks between a client's requests, and must get a
// processor back when the next arrives), for a while before the build, then
// during a rebuild of a 100k × 128 collection. Each latency runs from when
// the request was due (the end of the pause) to the answer, so a wake-up
// delayed by busy processors counts. It reports p50 and p99 of each phase
// in µs. Run alone, on the machine the figure is for:
//
//	go test -run '^$' -bench RetrieveDuringBuild -benchtime 1x ./engine
func BenchmarkRetrieveDuringBuild(b *testing.B) {
	for _, clients := range []int{1, 4} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) { benchRetrieveDuringBuild(b, clients) })
	}
}

func benchRetrieveDuringBuild(b *testing.B, clients int) {
	const n, dim = 100_000, 128
	db, err := Open(b.TempDir(), Options{Sync: wal.SyncNone, CheckpointInterval: -1, Logf: b.Logf})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if err := db.Create("p", Config{Dim: dim, Metric: L2, Index: IndexConfig{TrainThreshold: n}}); err != nil {
		b.Fatal(err)
	}
	c, _ := db.Collection("p")
	rng := rand.New(rand.NewSource(9))
	vecs := clustered(rng, n+1000, dim)
	for _, v := range vecs[:n] {
		if _, err := c.Add(AddRequest{Vector: v}); err != nil {
			b.Fatal(err)
		}
	}
	waitBuilt(b, c)
	queries := vecs[n:]
	opt := NewRetrieveOptions()
	// retrieveFor runs clients goroutines retrieving until until() and
	// returns all their latencies.
	retrieveFor := func(until func() bool) []time.Duration {
		var (
			mu  sync.Mutex // guards all
			all []time.Duration
			wg  sync.WaitGroup
		)
		for cl := range clients {
			wg.Go(func() {
				var lat []time.Duration
				for i := cl; !until(); i += clients {
					due := time.Now().Add(clientPause)
					time.Sleep(clientPause)
					if _, err := c.Retrieve(queries[i%len(queries)], opt); err != nil {
						b.Error(err)
						return
					}
					lat = append(lat, time.Since(due))
				}
				mu.Lock()
				all = append(all, lat...)
				mu.Unlock()
			})
		}
		wg.Wait()
		return all
	}
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		before := retrieveFor(func() bool { return time.Since(t0) > 2*time.Second })
		c.mu.Lock()
		c.building = true
		c.mu.Unlock()
		buildStart := time.Now()
		go c.build()
		during := retrieveFor(func() bool {
			c.mu.RLock()
			defer c.mu.RUnlock()
			return !c.building
		})
		buildTime := time.Since(buildStart)
		p50b, p99b := percentiles(before)
		p50d, p99d := percentiles(during)
		b.ReportMetric(float64(p50b.Microseconds()), "p50-before-µs")
		b.ReportMetric(float64(p99b.Microseconds()), "p99-before-µs")
		b.ReportMetric(float64(p50d.Microseconds()), "p50-during-µs")
		b.ReportMetric(float64(p99d.Microseconds()), "p99-during-µs")
		b.ReportMetric(buildTime.Seconds(), "build-s")
		b.Logf("before: %d retrievals p50 %v p99 %v; during a %v build: %d retrievals p50 %v p99 %v",
			len(before), p50b, p99b, buildTime.Round(time.Millisecond), len(during), p50d, p99d)
	}
}

// clientPause is the time between a retrieval's answer and the next
// request in BenchmarkRetrieveDuringBuild: a client's round trip.
const clientPause = 200 * time.Microsecond

// waitBuilt waits for c's first index.
func waitBuilt(tb testing.TB, c *Collection) {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		c.mu.RLock()
		ok := c.ivf != nil && !c.building
		c.mu.RUnlock()
		if ok {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	tb.Fatal("index not built within 5 minutes")
}

// percentiles returns the 50th and 99th percentiles of d (sorted in place).
func percentiles(d []time.Duration) (p50, p99 time.Duration) {
	if len(d) == 0 {
		return 0, 0
	}
	slices.Sort(d)
	return d[len(d)/2], d[len(d)*99/100]
}

// TestBuildPacedOnlyOnOneProcessor: a build leaves a processor free when
// there are several, and paces itself when there is only one.
func TestBuildPacedOnlyOnOneProcessor(t *testing.T) {
	prev := runtime.GOMAXPROCS(2)
	defer runtime.GOMAXPROCS(prev)
	if buildPace() != nil || buildWorkers() != 1 {
		t.Fatalf("GOMAXPROCS 2: paced %v, %d workers; want unpaced, 1 worker", buildPace() != nil, buildWorkers())
	}
	runtime.GOMAXPROCS(1)
	pace := buildPace()
	if pace == nil || buildWorkers() != 1 {
		t.Fatalf("GOMAXPROCS 1: paced %v, %d workers; want paced, 1 worker", pace != nil, buildWorkers())
	}
	// A step after more than a busy slice of work sleeps.
	time.Sleep(2 * busySlice)
	t0 := time.Now()
	pace()
	if d := time.Since(t0); d < busySlice/2 {
		t.Fatalf("pace after %v of work slept %v, want at least %v", 2*busySlice, d, busySlice/2)
	}
}
