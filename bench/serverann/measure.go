package serverann

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// querySet is the queries, as FP32 blobs for the protocol and as float32s
// for the in-process run, and the ids of each query's true 10 nearest.
type querySet struct {
	blobs [][]byte
	vecs  [][]float32
	gt    [][]int32 // first 10 of the ground truth, base rows = memory ids
}

func (qs *querySet) n() int { return len(qs.blobs) }

// hits counts how many of ids are among query i's true 10 nearest.
func (qs *querySet) hits(i int, ids []int64) int {
	h := 0
	for _, id := range ids {
		if slices.Contains(qs.gt[i], int32(id)) {
			h++
		}
	}
	return h
}

// measurement is what one phase of queries gave.
type measurement struct {
	Phase    string  `json:"phase"`
	Clients  int     `json:"clients"`
	Queries  int     `json:"queries"`
	Recall10 float64 `json:"recall10"`
	QPS      float64 `json:"qps"`
	P50US    float64 `json:"p50_us"`
	P99US    float64 `json:"p99_us"`
	MaxUS    float64 `json:"max_us"`
	// CPUUSPerQuery is the server's CPU time per query (the process's for
	// the in-process rows): what "per core" compares.
	CPUUSPerQuery float64 `json:"cpu_us_per_query"`
	Seconds       float64 `json:"seconds"`
	Index         string  `json:"index,omitempty"`
}

// recorder collects latencies and hits from concurrent clients.
type recorder struct {
	mu   sync.Mutex // guards lat and hits
	lat  []time.Duration
	hits int
}

func (r *recorder) add(lat []time.Duration, hits int) {
	r.mu.Lock()
	r.lat = append(r.lat, lat...)
	r.hits += hits
	r.mu.Unlock()
}

func (r *recorder) result(phase string, clients int, wall, cpu time.Duration) measurement {
	m := measurement{Phase: phase, Clients: clients, Queries: len(r.lat), Seconds: wall.Seconds()}
	if len(r.lat) == 0 {
		return m
	}
	slices.Sort(r.lat)
	pct := func(p float64) float64 {
		i := min(len(r.lat)-1, int(math.Ceil(p*float64(len(r.lat))))-1)
		return float64(r.lat[max(i, 0)]) / 1e3
	}
	m.Recall10 = float64(r.hits) / float64(10*len(r.lat))
	m.QPS = float64(len(r.lat)) / wall.Seconds()
	m.P50US, m.P99US, m.MaxUS = pct(0.50), pct(0.99), float64(r.lat[len(r.lat)-1])/1e3
	m.CPUUSPerQuery = float64(cpu) / 1e3 / float64(len(r.lat))
	return m
}

// searcher answers query i with the ids of the 10 memories retrieved.
// Each client goroutine gets its own.
type searcher interface {
	search(i int, dst []int64) ([]int64, error)
	close()
}

// runPhase runs clients goroutines, each with its own searcher, one query
// at a time. With count > 0 the clients share exactly count queries (one
// pass over the set when count == qs.n()); otherwise each runs for dur.
// keep, if not nil, is asked at each query's start and end whether the
// query counts (during a retrain: whether the retrain was still running);
// the run ends as soon as it says no. cpu reads the CPU time that is the
// phase's cost.
func runPhase(phase string, qs *querySet, clients, count int, dur time.Duration,
	newSearcher func() (searcher, error), keep func() bool, cpu func() (time.Duration, error)) (measurement, error) {
	ss := make([]searcher, clients)
	for i := range ss {
		s, err := newSearcher()
		if err != nil {
			for _, s := range ss[:i] {
				s.close()
			}
			return measurement{}, err
		}
		ss[i] = s
	}
	defer func() {
		for _, s := range ss {
			s.close()
		}
	}()
	var rec recorder
	var next atomic.Int64 // the next query of a counted run
	var stopped atomic.Bool
	var firstErr error
	var errOnce sync.Once
	cpu0, err := cpu()
	if err != nil {
		return measurement{}, err
	}
	start := time.Now()
	deadline := start.Add(dur)
	var wg sync.WaitGroup
	for c, s := range ss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make([]time.Duration, 0, 4096)
			hits := 0
			ids := make([]int64, 0, 10)
			for j := c * qs.n() / clients; ; j++ {
				var i int
				if count > 0 {
					k := next.Add(1) - 1
					if k >= int64(count) {
						break
					}
					i = int(k % int64(qs.n()))
				} else {
					if time.Now().After(deadline) {
						break
					}
					i = j % qs.n()
				}
				if stopped.Load() || keep != nil && !keep() {
					stopped.Store(true)
					break
				}
				t0 := time.Now()
				var err error
				ids, err = s.search(i, ids[:0])
				d := time.Since(t0)
				if err != nil {
					errOnce.Do(func() { firstErr = fmt.Errorf("%s: query %d: %w", phase, i, err) })
					stopped.Store(true)
					break
				}
				if keep != nil && !keep() {
					stopped.Store(true)
					break
				}
				lat = append(lat, d)
				hits += qs.hits(i, ids)
			}
			rec.add(lat, hits)
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	cpu1, err := cpu()
	if err != nil {
		return measurement{}, err
	}
	if firstErr != nil {
		return measurement{}, firstErr
	}
	return rec.result(phase, clients, wall, cpu1-cpu0), nil
}

// respSearcher retrieves over the protocol: MEM.RETRIEVE coll FP32 blob
// K1 10 K2 10 LAMBDA 0, the index's default NPROBE and REFINE (LAMBDA 0:
// phase 2 keeps phase 1's order, so the ids are the nearest neighbours).
type respSearcher struct {
	c    *conn
	coll []byte
	qs   *querySet
}

var (
	cmdRetrieve = []byte("MEM.RETRIEVE")
	argFP32     = []byte("FP32")
	argK1       = []byte("K1")
	argK2       = []byte("K2")
	argLambda   = []byte("LAMBDA")
	arg10       = []byte("10")
	arg0        = []byte("0")
)

func (s *respSearcher) search(i int, dst []int64) ([]int64, error) {
	s.c.send(cmdRetrieve, s.coll, argFP32, s.qs.blobs[i], argK1, arg10, argK2, arg10, argLambda, arg0)
	if err := s.c.flush(); err != nil {
		return nil, err
	}
	reply, err := s.c.read()
	if err != nil {
		return nil, err
	}
	return retrievedIDs(reply, dst)
}

func (s *respSearcher) close() { s.c.close() }

func newRespSearcher(addr, coll string, qs *querySet) func() (searcher, error) {
	return func() (searcher, error) {
		c, err := dial(addr)
		if err != nil {
			return nil, err
		}
		return &respSearcher{c: c, coll: []byte(coll), qs: qs}, nil
	}
}
