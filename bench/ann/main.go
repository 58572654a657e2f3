package ann

import (
	"errors"
	"flag"
	"fmt"
	"github.com/memrl/memrl/internal/cliflag"
	"io"
	"runtime"
	"strconv"
	"strings"

	"github.com/memrl/memrl/ivfpq"
)

// config is the parsed command line.
type config struct {
	base, query, gt, learn string
	nlist, pqm, pqbits     int
	metric                 ivfpq.Metric
	nprobe, refine         []int
	prune                  []float32 // PruneFactor values to sweep; none means the default
	k                      int
	jsonPath, outIDs       string
	nq, nbase, trainSize   int
	threads                int
	batch                  int
	synthetic, dim         int
	indexDir               string
	reuseIndex             bool
	noPrune                bool
	mapFiles               bool
	cpuProfile             string
	seed                   int64
}

// Main runs `memrl bench ann` with args (without the program and
// sub-command names) and writes the report to stdout.
func Main(args []string, stdout io.Writer) error {
	cfg, err := parseArgs(args, stdout)
	if err != nil {
		return err // cliflag.ErrHelp after --help: the caller exits 0
	}
	return run(cfg, stdout)
}

func parseArgs(args []string, stdout io.Writer) (*config, error) {
	fs := flag.NewFlagSet("memrl bench ann", flag.ContinueOnError)
	cfg := &config{}
	var nprobe, refine, prune, metric string
	fs.StringVar(&cfg.base, "base", "", "base vectors (.fvecs or .bvecs)")
	fs.StringVar(&cfg.query, "query", "", "query vectors (.fvecs or .bvecs)")
	fs.StringVar(&cfg.gt, "gt", "", "ground truth (.ivecs, 0-based rows of base, best first)")
	fs.StringVar(&cfg.learn, "learn", "", "training vectors (default: a random sample of base)")
	fs.IntVar(&cfg.nlist, "nlist", 0, "inverted lists (default: ivfpq.DefaultParams)")
	fs.IntVar(&cfg.pqm, "pqm", 0, "PQ sub-spaces M (default: ivfpq.DefaultParams)")
	fs.IntVar(&cfg.pqbits, "pqbits", 0, "bits per PQ code: 4 (fast scan) or 8 (default: ivfpq.DefaultParams)")
	fs.StringVar(&metric, "metric", "l2", "l2 or ip (ground truth must match)")
	fs.StringVar(&nprobe, "nprobe", "", "comma-separated nprobe values to sweep (default: ivfpq.DefaultNProbe)")
	fs.StringVar(&refine, "refine", "", "comma-separated re-rank factors to sweep (default: ivfpq.DefaultRefine)")
	fs.IntVar(&cfg.k, "k", 10, "neighbours returned per query")
	fs.StringVar(&cfg.jsonPath, "json", "", "write the results as a JSON array, one object per setting")
	fs.StringVar(&cfg.outIDs, "out-ids", "", "write each setting's returned ids to PREFIX.nprobeN.refineR.ivecs")
	fs.IntVar(&cfg.nq, "nq", 0, "use only the first N queries (default all)")
	fs.IntVar(&cfg.nbase, "nbase", 0, "use only the first N base vectors (ground truth must match; default all)")
	fs.IntVar(&cfg.trainSize, "train-size", 0, "training vectors used (default: all of --learn, else min(n, 100·nlist) from base)")
	fs.IntVar(&cfg.threads, "threads", runtime.NumCPU(), "goroutines for the build, and for the search with --batch (without it, search is one query at a time on one goroutine)")
	fs.IntVar(&cfg.batch, "batch", 0, "search the queries in batches of N (ivfpq.SearchBatch) on --threads workers; 0: one query per call on one goroutine")
	fs.IntVar(&cfg.synthetic, "synthetic", 0, "generate N clustered base vectors instead of reading files")
	fs.IntVar(&cfg.dim, "dim", 64, "dimension of --synthetic data")
	fs.StringVar(&cfg.indexDir, "index-dir", "", "save the index here, reopen it (mmap) and time the open and first query (default: a temporary directory)")
	fs.BoolVar(&cfg.reuseIndex, "reuse-index", false, "open the index already saved in --index-dir (same data and shape) instead of building one; build_s is the building run's")
	fs.StringVar(&prune, "prune", "", "comma-separated list-pruning factors in (0, 1] to sweep (ivfpq.SearchParams.PruneFactor; 1 is lossless; default: ivfpq.DefaultPruneFactor)")
	fs.BoolVar(&cfg.noPrune, "no-prune", false, "scan every probed list (ivfpq.SearchParams.NoPrune), to measure what list pruning saves")
	fs.BoolVar(&cfg.mapFiles, "map-files", false, "search the index through a mapping of its file and re-rank from the base vectors in the Go heap, instead of both in huge-page memory as the engine keeps them by default (memrl serve --map-files)")
	fs.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write a CPU profile of the search sweep to this file")
	fs.Int64Var(&cfg.seed, "seed", 1, "random seed for training and synthetic data")
	if err := cliflag.Parse(fs, args, 0); err != nil {
		return nil, err
	}
	var err error
	if cfg.nprobe, err = parseInts(nprobe); err != nil {
		return nil, fmt.Errorf("--nprobe: %w", err)
	}
	if cfg.refine, err = parseInts(refine); err != nil {
		return nil, fmt.Errorf("--refine: %w", err)
	}
	if cfg.prune, err = parseFactors(prune); err != nil {
		return nil, fmt.Errorf("--prune: %w", err)
	}
	switch strings.ToLower(metric) {
	case "l2":
		cfg.metric = ivfpq.L2
	case "ip":
		cfg.metric = ivfpq.IP
	default:
		return nil, fmt.Errorf("--metric %q: want l2 or ip", metric)
	}
	if cfg.synthetic == 0 && (cfg.base == "" || cfg.query == "" || cfg.gt == "") {
		return nil, errors.New("need --base, --query and --gt, or --synthetic N")
	}
	if cfg.k <= 0 {
		return nil, fmt.Errorf("--k %d must be positive", cfg.k)
	}
	if cfg.batch < 0 {
		return nil, fmt.Errorf("--batch %d must not be negative", cfg.batch)
	}
	if cfg.threads < 1 {
		return nil, fmt.Errorf("--threads %d must be positive", cfg.threads)
	}
	if cfg.reuseIndex && cfg.indexDir == "" {
		return nil, errors.New("--reuse-index needs --index-dir")
	}
	if cfg.pqbits != 0 && cfg.pqbits != 4 && cfg.pqbits != 8 {
		return nil, fmt.Errorf("--pqbits %d: want 4 or 8", cfg.pqbits)
	}
	return cfg, nil
}

// parseFactors parses "1,0.5,0.4", each in (0, 1]; empty means none given.
func parseFactors(s string) ([]float32, error) {
	if s == "" {
		return nil, nil
	}
	var out []float32
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 32)
		if err != nil || !(v > 0 && v <= 1) {
			return nil, fmt.Errorf("%q is not a number in (0, 1]", f)
		}
		out = append(out, float32(v))
	}
	return out, nil
}

// parseInts parses "1,4,16"; empty means none given.
func parseInts(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, v)
	}
	return out, nil
}
