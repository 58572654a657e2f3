// Package filter measures filtered phase-1 search on a real engine
// collection of the SIFT set, with a synthetic tenant per memory (1,000
// tenants, Zipf–Mandelbrot sized from about 5% down to 0.01% of the rows)
// and a kind (5 values). It prints per tenant-size band the filtered
// recall@10 against exact filtered ground truth and QPS, beside unfiltered
// search and post-filtering (global top K1, then the filter), and the
// filter's memory. Run it as `memrl bench filter`; its modes:
//
//   - default (bitmap mode): the benchmark builds one row bitmap per tenant
//     and kind itself and passes them as engine.SearchOptions' Allow and
//     Match, the phase-1 search alone;
//   - --attrs (attrs.go): the same assignment stored as real attributes
//     {"tenant":"t17","kind":"k2"} in a collection with INDEXED tenant,kind,
//     queried through Collection.Retrieve with RetrieveOptions.Filter (the
//     path of MEM.RETRIEVE … FILTER), then with the indexed fields dropped
//     (the filter evaluated on each candidate: widening);
//   - --server (server.go): MEM.RETRIEVE … FILTER over the protocol on an
//     in-process server, with 1 and 4 clients, for three bands;
//   - --crossover (crossover.go): the exact path against the index path for
//     uniformly random allowed sets of growing size, which is how the
//     engine's path rule was set.
package filter

import (
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/internal/cliflag"
	"github.com/memrl/memrl/simd"
	"github.com/memrl/memrl/wal"
)

type config struct {
	data      string
	nbase     int
	nq        int
	tenants   int
	kinds     int
	k         int
	seed      int64
	dir       string
	crossover bool
	attrs     bool   // real attributes, INDEXED tenant,kind, and FILTER (attrs.go)
	server    bool   // MEM.RETRIEVE … FILTER over the protocol (server.go)
	nqUnidx   int    // queries per band without the indexed fields
	clients   string // client counts of the protocol run
}

// Main runs the benchmark with command-line args, writing the report to w.
func Main(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("bench filter", flag.ContinueOnError)
	var cfg config
	fs.StringVar(&cfg.data, "data", "../shared/data/sift1m-deb", "folder holding base.bvecs and query.bvecs")
	fs.IntVar(&cfg.nbase, "nbase", 1_000_000, "base vectors loaded (the first n)")
	fs.IntVar(&cfg.nq, "nq", 100, "queries per tenant-size band (or per selectivity with --crossover)")
	fs.IntVar(&cfg.tenants, "tenants", 1000, "tenants")
	fs.IntVar(&cfg.kinds, "kinds", 5, "values of kind")
	fs.IntVar(&cfg.k, "k", 10, "K1 = K2 of each retrieval; recall@k is measured")
	fs.Int64Var(&cfg.seed, "seed", 1, "seed of the tenant and kind assignment and query choice")
	fs.StringVar(&cfg.dir, "dir", "", "database folder (empty: a temporary one, removed at the end)")
	fs.BoolVar(&cfg.crossover, "crossover", false, "time the exact path against the index path by selectivity instead")
	fs.BoolVar(&cfg.attrs, "attrs", false, "store real attributes in a collection with INDEXED tenant,kind and filter with FILTER expressions, then without the indexed fields")
	fs.BoolVar(&cfg.server, "server", false, "measure MEM.RETRIEVE … FILTER over the protocol on an in-process server (the attribute collection)")
	fs.IntVar(&cfg.nqUnidx, "nq-unindexed", 20, "queries per tenant-size band once the indexed fields are dropped (--attrs)")
	fs.StringVar(&cfg.clients, "clients", "1,4", "concurrent clients of the protocol run (--server), comma-separated")
	if err := cliflag.Parse(fs, args, 0); err != nil {
		return err
	}
	return run(&cfg, w)
}

// bench is a loaded collection and what the runs need of it.
type bench struct {
	cfg     *config
	w       io.Writer
	dim     int
	base    []float32 // by row
	queries []float32
	c       *engine.Collection
	name    string      // the collection's: "sift" (bitmaps) or "sift_attrs"
	asg     *assignment // tenants and kinds (attribute mode: what was stored)
}

func run(cfg *config, w io.Writer) error {
	b := &bench{cfg: cfg, w: w, name: "sift"}
	attrMode := cfg.attrs || cfg.server
	if attrMode {
		if cfg.crossover {
			return fmt.Errorf("--crossover measures the bitmap mode; leave out --attrs and --server")
		}
		if cfg.tenants > 1<<16 || cfg.kinds > 1<<8 {
			return fmt.Errorf("at most %d tenants and %d kinds", 1<<16, 1<<8)
		}
		b.name = "sift_attrs"
	}
	var err error
	var n int
	if b.base, n, b.dim, err = readBvecs(filepath.Join(cfg.data, "base.bvecs"), cfg.nbase); err != nil {
		return err
	}
	if b.queries, _, _, err = readBvecs(filepath.Join(cfg.data, "query.bvecs"), 0); err != nil {
		return err
	}
	fmt.Fprintf(w, "data: %s, %d base, %d queries, dim %d\n", cfg.data, n, len(b.queries)/b.dim, b.dim)
	dir := cfg.dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "memrl-bench-filter-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	db, err := engine.Open(dir, engine.Options{Sync: wal.SyncNone, CheckpointInterval: -1, CheckpointBytes: -1, Logf: func(string, ...any) {}})
	if err != nil {
		return err
	}
	defer db.Close()
	if attrMode {
		b.asg = assign(b.seeded(3), n, cfg.tenants, cfg.kinds)
	}
	if b.c, err = db.Collection(b.name); err == nil {
		// A --dir of an earlier run: reuse its memories (and saved index).
		info, err := b.c.Info()
		if err != nil {
			return err
		}
		if info.Count != n || info.Rows != uint32(n) {
			return fmt.Errorf("%s holds %d memories in %d rows, not the %d loaded; use another --dir", dir, info.Count, info.Rows, n)
		}
		fmt.Fprintf(w, "reusing the %d memories in %s\n", n, dir)
		if attrMode {
			if err := b.checkReused(); err != nil {
				return err
			}
		}
	} else if attrMode {
		if err := b.fillAttrs(db, n); err != nil {
			return err
		}
	} else if err := b.fill(db, n); err != nil {
		return err
	}
	start := time.Now()
	for {
		info, err := b.c.Info()
		if err != nil {
			return err
		}
		if strings.HasPrefix(info.Index, "ivfpq") {
			fmt.Fprintf(w, "index %s ready after %v\n", info.Index, time.Since(start).Round(time.Second))
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if cfg.crossover {
		return b.crossover(w)
	}
	if attrMode {
		if err := b.warm(w); err != nil {
			return err
		}
		if cfg.attrs {
			if err := b.attrsTable(w); err != nil {
				return err
			}
		}
		if cfg.server {
			return b.serverTable(w, db)
		}
		return nil
	}
	return b.tenantsTable(w)
}

// fill creates the collection and adds the base vectors in order.
func (b *bench) fill(db *engine.DB, n int) error {
	ecfg := engine.NewConfig(b.dim)
	ecfg.Metric = engine.L2
	ecfg.Index.TrainThreshold = n
	if err := db.Create(b.name, ecfg); err != nil {
		return err
	}
	var err error
	if b.c, err = db.Collection(b.name); err != nil {
		return err
	}
	start := time.Now()
	for r := range n {
		id, err := b.c.Add(engine.AddRequest{Vector: b.base[r*b.dim : (r+1)*b.dim]})
		if err != nil {
			return err
		}
		// Rows are appended in add order and ids count from 1 in a new
		// collection: row r holds id r+1. Checked, since the run maps
		// returned ids to rows that way.
		if id != uint64(r)+1 {
			return fmt.Errorf("add %d got id %d; the benchmark needs id = row+1", r, id)
		}
	}
	fmt.Fprintf(b.w, "added %d memories in %v\n", n, time.Since(start).Round(time.Millisecond))
	return nil
}

// retrieve runs one retrieval returning phase 1's top k by similarity and
// returns their rows.
func (b *bench) retrieve(q []float32, k int, so engine.SearchOptions) ([]uint32, error) {
	opt := engine.NewRetrieveOptions()
	so.K1 = k
	opt.SearchOptions = so
	opt.K2, opt.Lambda = k, 0
	res, err := b.c.Retrieve(q, opt)
	if err != nil {
		return nil, err
	}
	rows := make([]uint32, len(res))
	for i, r := range res {
		rows[i] = uint32(r.ID - 1)
	}
	return rows, nil
}

// exactTop is the ground truth: the k rows of allow (nil: all) that match
// (nil: all) nearest q, by brute force.
func (b *bench) exactTop(q []float32, k int, allow *roaring.Bitmap, match func(uint32) bool) []uint32 {
	type cand struct {
		row uint32
		d   float32
	}
	var cs []cand
	consider := func(row uint32) {
		if match != nil && !match(row) {
			return
		}
		cs = append(cs, cand{row, simd.L2Sq(q, b.base[int(row)*b.dim:int(row+1)*b.dim])})
	}
	if allow == nil {
		for r := range len(b.base) / b.dim {
			consider(uint32(r))
		}
	} else {
		it := allow.Iterator()
		for it.HasNext() {
			consider(it.Next())
		}
	}
	slices.SortFunc(cs, func(a, c cand) int {
		switch {
		case a.d < c.d:
			return -1
		case a.d > c.d:
			return 1
		}
		return int(a.row) - int(c.row)
	})
	out := make([]uint32, 0, k)
	for _, c := range cs[:min(k, len(cs))] {
		out = append(out, c.row)
	}
	return out
}

// hits counts the rows of got found in want.
func hits(got, want []uint32) int {
	h := 0
	for _, g := range got {
		if slices.Contains(want, g) {
			h++
		}
	}
	return h
}

// tenantShares returns n Zipf–Mandelbrot shares ∝ (i+5.5)^-1.23, i = 1..n,
// which for n = 1000 run from 5.0% down to 0.010%.
func tenantShares(n int) []float64 {
	s := make([]float64, n)
	var sum float64
	for i := range s {
		s[i] = math.Pow(float64(i+1)+5.5, -1.23)
		sum += s[i]
	}
	for i := range s {
		s[i] /= sum
	}
	return s
}

// readBvecs reads a TEXMEX .bvecs file as flat float32; limit > 0 reads at
// most limit vectors.
func readBvecs(path string, limit int) ([]float32, int, int, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, 0, err
	}
	if len(raw) < 4 {
		return nil, 0, 0, fmt.Errorf("%s: too short", path)
	}
	dim := int(binary.LittleEndian.Uint32(raw))
	if dim <= 0 || dim > 1<<16 || len(raw)%(4+dim) != 0 {
		return nil, 0, 0, fmt.Errorf("%s: not a .bvecs file of one dimension", path)
	}
	n := len(raw) / (4 + dim)
	if limit > 0 {
		n = min(n, limit)
	}
	x := make([]float32, n*dim)
	for i := range n {
		rec := raw[i*(4+dim) : (i+1)*(4+dim)]
		if int(binary.LittleEndian.Uint32(rec)) != dim {
			return nil, 0, 0, fmt.Errorf("%s: vector %d has another dimension", path, i)
		}
		for j, v := range rec[4:] {
			x[i*dim+j] = float32(v)
		}
	}
	return x, n, dim, nil
}

// seeded returns the run's random source for one purpose.
func (b *bench) seeded(salt int64) *rand.Rand {
	return rand.New(rand.NewSource(b.cfg.seed*1000 + salt))
}
