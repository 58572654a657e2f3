package ann

import (
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/memrl/memrl/ivfpq"
	"github.com/memrl/memrl/vfs"
)

// dataset is what one run measures against.
type dataset struct {
	base, queries, learn []float32
	dim                  int
	gt                   [][]int32
}

func (d *dataset) n() int  { return len(d.base) / d.dim }
func (d *dataset) nq() int { return len(d.queries) / d.dim }

// source serves re-rank vectors from the in-memory base.
type source struct {
	x   []float32
	dim int
}

func (s source) Vector(row uint32) []float32 { return s.x[int(row)*s.dim : (int(row)+1)*s.dim] }

func load(cfg *config, w io.Writer) (*dataset, error) {
	ds := &dataset{}
	if cfg.synthetic > 0 {
		nq := cfg.nq
		if nq <= 0 {
			nq = 1000
		}
		ds.dim = cfg.dim
		ds.base, ds.queries, _, ds.gt = synthetic(cfg.synthetic, nq, 0, cfg.dim, max(cfg.k, 10), cfg.seed)
		fmt.Fprintf(w, "data: synthetic, %d base, %d queries, dim %d\n", ds.n(), ds.nq(), ds.dim)
		return ds, nil
	}
	var err error
	var n int
	if ds.base, n, ds.dim, err = readVectors(cfg.base, cfg.nbase); err != nil {
		return nil, err
	}
	var qdim int
	if ds.queries, _, qdim, err = readVectors(cfg.query, cfg.nq); err != nil {
		return nil, err
	}
	if qdim != ds.dim {
		return nil, fmt.Errorf("queries have dimension %d, base %d", qdim, ds.dim)
	}
	if ds.gt, err = readIvecs(cfg.gt, cfg.nq); err != nil {
		return nil, err
	}
	if len(ds.gt) < ds.nq() {
		return nil, fmt.Errorf("ground truth has %d rows for %d queries", len(ds.gt), ds.nq())
	}
	for i, row := range ds.gt[:ds.nq()] {
		if len(row) < 10 {
			return nil, fmt.Errorf("ground truth depth %d < 10", len(row))
		}
		for _, r := range row[:10] {
			if r < 0 || int(r) >= n {
				return nil, fmt.Errorf("ground truth row %d names base row %d of %d (does --nbase match the ground truth?)", i, r, n)
			}
		}
	}
	if cfg.learn != "" {
		var ldim int
		if ds.learn, _, ldim, err = readVectors(cfg.learn, cfg.trainSize); err != nil {
			return nil, err
		}
		if ldim != ds.dim {
			return nil, fmt.Errorf("learn set has dimension %d, base %d", ldim, ds.dim)
		}
	}
	fmt.Fprintf(w, "data: %s, %d base, %d queries, dim %d\n", cfg.base, ds.n(), ds.nq(), ds.dim)
	return ds, nil
}

// trainingSet is --learn, or a random sample of base.
func trainingSet(cfg *config, ds *dataset, p ivfpq.Params) []float32 {
	if ds.learn != nil {
		return ds.learn
	}
	m := cfg.trainSize
	if m <= 0 {
		m = 100 * p.NList
	}
	m = max(m, 256)
	if m >= ds.n() {
		return ds.base
	}
	rng := rand.New(rand.NewSource(cfg.seed))
	out := make([]float32, 0, m*ds.dim)
	for _, i := range rng.Perm(ds.n())[:m] {
		out = append(out, ds.base[i*ds.dim:(i+1)*ds.dim]...)
	}
	return out
}

// result is one swept setting's measurements; the JSON names are the
// stable interface other tools read.
type result struct {
	NProbe     int     `json:"nprobe"`
	Refine     int     `json:"refine"`
	Prune      float32 `json:"prune"` // ivfpq.SearchParams.PruneFactor (0 with --no-prune)
	Recall1    float64 `json:"recall1"`
	Recall10   float64 `json:"recall10"`
	QPS        float64 `json:"qps"`
	MeanUS     float64 `json:"mean_us"`
	CPUUS      float64 `json:"cpu_us"`       // mean thread CPU time per query (0 where not measured); with batches the process's CPU time (every thread) per query
	Threads    int     `json:"threads"`      // search workers (1 without --batch)
	Batch      int     `json:"batch"`        // queries per call (1 without --batch)
	Pruned     float64 `json:"pruned_lists"` // mean lists per query skipped by ivfpq's Voronoi bound
	P50US      float64 `json:"p50_us"`
	P99US      float64 `json:"p99_us"`
	BuildS     float64 `json:"build_s"`
	IndexBytes int64   `json:"index_bytes"`
	RSSBytes   int64   `json:"rss_bytes"`
	OpenMS     float64 `json:"open_first_query_ms"`
	Engine     string  `json:"engine"`
	Index      string  `json:"index"`

	ids [][]int32
}

func run(cfg *config, w io.Writer) error {
	ds, err := load(cfg, w)
	if err != nil {
		return err
	}
	p := ivfpq.DefaultParams(ds.n(), ds.dim, cfg.metric)
	if cfg.nlist > 0 {
		p.NList = cfg.nlist
	}
	if cfg.pqm > 0 {
		p.M = cfg.pqm
	}
	if cfg.pqbits > 0 {
		p.Bits = cfg.pqbits
	}
	if err := p.Validate(); err != nil {
		return err
	}
	nprobes := cfg.nprobe
	if len(nprobes) == 0 {
		nprobes = []int{ivfpq.DefaultNProbe(p.NList)}
	}
	refines := cfg.refine
	if len(refines) == 0 {
		refines = []int{ivfpq.DefaultRefine(p.Bits)}
	}
	prunes := cfg.prune
	if len(prunes) == 0 || cfg.noPrune {
		prunes = []float32{ivfpq.DefaultPruneFactor}
	}

	name := fmt.Sprintf("IVF%d,PQ%dx%d", p.NList, p.M, p.Bits)
	dir := cfg.indexDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "annbench"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	buildS, reused, err := reusedBuild(cfg, ds, p, dir)
	if err != nil {
		return err
	}
	if !reused {
		if buildS, err = build(cfg, ds, p, name, dir, w); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(w, "index: %s %v reused from %s (built in %.1fs)\n", name, p.Metric, dir, buildS)
	}
	open := ivfpq.OpenResident
	if cfg.mapFiles {
		open = ivfpq.Open
	} else {
		base, free, err := residentCopy(ds.base)
		if err != nil {
			return err
		}
		defer free()
		ds.base = base
		debug.FreeOSMemory() // the heap copy is garbage now: hand it back
	}
	src := source{ds.base, ds.dim}
	start := time.Now()
	ix, err := open(vfs.Default, dir)
	if err != nil {
		return err
	}
	defer ix.Close()
	if _, err := ix.Search(ds.queries[:ds.dim], cfg.k, ivfpq.SearchParams{}, nil, src); err != nil {
		return err
	}
	openMS := float64(time.Since(start).Microseconds()) / 1000
	fmt.Fprintf(w, "open + first query: %.1f ms; index %d bytes\n", openMS, ix.Bytes())
	// A list's checksum is verified the first time a search reads it
	// (ivfpq's lazy open). Check them all now so that the sweep measures
	// searches in steady state, as hnswlib's and FAISS's are measured after
	// their whole index is loaded: otherwise the first setting pays for
	// hashing every list it touches (about 6 ms at 1M).
	if err := ix.Verify(); err != nil {
		return err
	}

	if cfg.cpuProfile != "" {
		f, err := os.Create(cfg.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	var results []result
	for _, np := range nprobes {
		for _, rf := range refines {
			for _, pf := range prunes {
				sp := ivfpq.SearchParams{NProbe: np, Refine: rf, PruneFactor: pf, NoPrune: cfg.noPrune}
				var r result
				if cfg.batch > 0 {
					r, err = sweepBatch(ix, ds, src, cfg.k, sp, cfg.batch, cfg.threads)
				} else {
					r, err = sweepOne(ix, ds, src, cfg.k, sp)
				}
				if err != nil {
					return err
				}
				if cfg.noPrune {
					r.Prune = 0
				}
				r.BuildS, r.IndexBytes, r.OpenMS = buildS, ix.Bytes(), openMS
				r.RSSBytes = residentBytes()
				r.Engine, r.Index = "memrl", name
				results = append(results, r)
			}
		}
	}
	printTable(w, results)
	if cfg.jsonPath != "" {
		if err := writeJSON(cfg.jsonPath, results); err != nil {
			return err
		}
	}
	if cfg.outIDs != "" {
		for _, r := range results {
			path := fmt.Sprintf("%s.nprobe%d.refine%d.ivecs", cfg.outIDs, r.NProbe, r.Refine)
			if len(prunes) > 1 {
				path = fmt.Sprintf("%s.nprobe%d.refine%d.prune%g.ivecs", cfg.outIDs, r.NProbe, r.Refine, r.Prune)
			}
			if err := writeIvecs(path, r.ids); err != nil {
				return err
			}
		}
	}
	return nil
}

// sweepOne answers every query one at a time on this goroutine.
func sweepOne(ix *ivfpq.Index, ds *dataset, src source, k int, sp ivfpq.SearchParams) (result, error) {
	// One thread for the whole sweep, so that its CPU clock is the
	// search's (see threadCPU).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	nq := ds.nq()
	lat := make([]time.Duration, nq)
	cpu0 := threadCPU()
	ids := make([][]int32, nq)
	var hit1, hit10, pruned int
	var total time.Duration
	for qi := 0; qi < nq; qi++ {
		q := ds.queries[qi*ds.dim : (qi+1)*ds.dim]
		t0 := time.Now()
		// SearchFiltered with no filter is what the engine runs (and costs
		// what Search does); it also reports the lists pruned.
		got, st, err := ix.SearchFiltered(q, k, sp, ivfpq.Filter{}, src)
		d := time.Since(t0)
		if err != nil {
			return result{}, err
		}
		lat[qi] = d
		pruned += st.Pruned
		total += d
		row := make([]int32, len(got))
		for i, g := range got {
			row[i] = int32(g.Row)
		}
		ids[qi] = row
		truth := ds.gt[qi]
		if len(row) > 0 && row[0] == truth[0] {
			hit1++
		}
		for _, r := range row[:min(10, len(row))] {
			if slices.Contains(truth[:10], r) {
				hit10++
			}
		}
	}
	cpuNS := threadCPU() - cpu0
	slices.Sort(lat)
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }
	return result{
		NProbe:   sp.NProbe,
		Refine:   sp.Refine,
		Prune:    sp.PruneFactor,
		Recall1:  float64(hit1) / float64(nq),
		Recall10: float64(hit10) / float64(10*nq),
		QPS:      float64(nq) / total.Seconds(),
		MeanUS:   us(total) / float64(nq),
		CPUUS:    float64(cpuNS) / 1000 / float64(nq),
		Pruned:   float64(pruned) / float64(nq),
		P50US:    us(lat[nq/2]),
		P99US:    us(lat[min(nq-1, nq*99/100)]),
		Threads:  1,
		Batch:    1,
		ids:      ids,
	}, nil
}

// sweepBatch answers the queries in batches of batch queries
// (ivfpq.SearchBatch) on threads workers: min(threads, batches) goroutines
// take batches in turn, each searching its batch on threads/goroutines
// workers, so that one batch of the whole query set gets every thread and
// many small batches one each. QPS is the queries over the wall time of
// the whole sweep; cpu_us the process's CPU time (getrusage, every thread)
// per query; p50_us and p99_us are of a batch's latency, not a query's.
func sweepBatch(ix *ivfpq.Index, ds *dataset, src source, k int, sp ivfpq.SearchParams, batch, threads int) (result, error) {
	nq := ds.nq()
	nb := (nq + batch - 1) / batch
	gs := max(1, min(threads, nb))
	per := max(1, threads/gs)
	res := make([][]ivfpq.Neighbor, nq)
	lat := make([]time.Duration, nb)
	errs := make([]error, gs)
	var next atomic.Int64
	var wg sync.WaitGroup
	cpu0 := processCPU()
	start := time.Now()
	for g := range gs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				b := int(next.Add(1)) - 1
				if b >= nb {
					return
				}
				lo, hi := b*batch, min((b+1)*batch, nq)
				t0 := time.Now()
				got, err := ix.SearchBatch(ds.queries[lo*ds.dim:hi*ds.dim], k, sp, nil, src, per)
				lat[b] = time.Since(t0)
				if err != nil {
					errs[g] = err
					return
				}
				copy(res[lo:hi], got)
			}
		}()
	}
	wg.Wait()
	total := time.Since(start)
	cpuNS := processCPU() - cpu0
	if err := errors.Join(errs...); err != nil {
		return result{}, err
	}
	ids := make([][]int32, nq)
	var hit1, hit10 int
	for qi, got := range res {
		row := make([]int32, len(got))
		for i, g := range got {
			row[i] = int32(g.Row)
		}
		ids[qi] = row
		truth := ds.gt[qi]
		if len(row) > 0 && row[0] == truth[0] {
			hit1++
		}
		for _, r := range row[:min(10, len(row))] {
			if slices.Contains(truth[:10], r) {
				hit10++
			}
		}
	}
	slices.Sort(lat)
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }
	return result{
		NProbe:   sp.NProbe,
		Refine:   sp.Refine,
		Prune:    sp.PruneFactor,
		Recall1:  float64(hit1) / float64(nq),
		Recall10: float64(hit10) / float64(10*nq),
		QPS:      float64(nq) / total.Seconds(),
		MeanUS:   us(total) / float64(nq),
		CPUUS:    float64(cpuNS) / 1000 / float64(nq),
		P50US:    us(lat[nb/2]),
		P99US:    us(lat[min(nb-1, nb*99/100)]),
		Threads:  threads,
		Batch:    batch,
		ids:      ids,
	}, nil
}

// buildSFile holds, next to a saved index, the seconds its build took, so
// that a run with --reuse-index reports the building run's figure.
const buildSFile = "build_s"

// build trains and fills the index, saves it in dir (with its build time)
// and returns the build time in seconds.
func build(cfg *config, ds *dataset, p ivfpq.Params, name, dir string, w io.Writer) (float64, error) {
	train := trainingSet(cfg, ds, p)
	start := time.Now()
	ix, err := ivfpq.Train(p, train, cfg.threads, cfg.seed)
	if err != nil {
		return 0, err
	}
	trainS := time.Since(start).Seconds()
	if err := ix.AddBatch(0, ds.base, cfg.threads); err != nil {
		return 0, err
	}
	buildS := time.Since(start).Seconds()
	fmt.Fprintf(w, "index: %s %v, trained on %d vectors in %.1fs, built in %.1fs (%d threads)\n",
		name, p.Metric, len(train)/ds.dim, trainS, buildS, cfg.threads)
	// Save, drop, reopen: the sweep runs on the mmap'd index as the engine
	// would after a restart, and the open + first query is timed.
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	if err := ix.Save(vfs.Default, dir); err != nil {
		return 0, err
	}
	ix.Close()
	return buildS, os.WriteFile(filepath.Join(dir, buildSFile), []byte(strconv.FormatFloat(buildS, 'g', -1, 64)), 0o644)
}

// reusedBuild reports whether --reuse-index applies (an index is saved in
// dir) and the build time recorded with it. The saved index must have
// the shape asked for and hold every base row; else it is an error, not a
// silent rebuild.
func reusedBuild(cfg *config, ds *dataset, p ivfpq.Params, dir string) (float64, bool, error) {
	if !cfg.reuseIndex {
		return 0, false, nil
	}
	b, err := os.ReadFile(filepath.Join(dir, buildSFile))
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	buildS, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
	if err != nil {
		return 0, false, fmt.Errorf("--reuse-index: %s: %w", filepath.Join(dir, buildSFile), err)
	}
	ix, err := ivfpq.Open(vfs.Default, dir)
	if err != nil {
		return 0, false, fmt.Errorf("--reuse-index: %w", err)
	}
	defer ix.Close()
	if got := ix.Params(); got != p || int(ix.Rows()) != ds.n() {
		return 0, false, fmt.Errorf("--reuse-index: %s holds %+v with %d rows, want %+v with %d", dir, got, ix.Rows(), p, ds.n())
	}
	return buildS, true, nil
}

// residentCopy returns a copy of x in memory from vfs.AllocResident, where
// the engine keeps a collection's rows by default (huge pages under
// transparent huge pages "madvise" or "always"), and the function that
// frees it: the re-rank reads rows scattered over the base, and from the Go
// heap's 4 KB pages each is a page walk as well as a cache miss.
func residentCopy(x []float32) ([]float32, func() error, error) {
	b, free, err := vfs.AllocResident(int64(len(x)) * 4)
	if err != nil || len(x) == 0 {
		return x, func() error { return nil }, err
	}
	y := unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), len(x))
	copy(y, x)
	return y, free, nil
}
