package maintain

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/memrl/memrl/bench/serverann"
	"github.com/memrl/memrl/internal/cliflag"
)

// Config is one run's settings; Main fills it from flags.
type Config struct {
	Base, Query string
	N, NQ       int
	RewardShare float64
	Collection  string
	CreateArgs  []string      // appended to MEM.CREATE coll DIM d METRIC L2
	Bin         string        // memrl binary (default: this executable)
	Sync        string        // the server's --sync
	Dir         string        // work folder; "" a temporary one, removed at the end
	Clients     int           // clients of the concurrent QPS column
	Duration    time.Duration // length of the concurrent QPS measure
	WritersIdle time.Duration // how long the writers run before compaction
	BuildWait   time.Duration // the longest wait for the fill's index builds
	Seed        int64
	JSON        string
}

// Main runs `memrl bench maintain` with args, reporting to stdout.
func Main(args []string, stdout io.Writer) error {
	cfg, err := parseArgs(args)
	if err != nil {
		return err
	}
	bin := cfg.Bin
	if bin == "" {
		if bin, err = os.Executable(); err != nil {
			return err
		}
	}
	work, cleanup, err := serverann.WorkDir(cfg.Dir)
	if err != nil {
		return err
	}
	defer cleanup()
	return Run(cfg, work, serverann.ExecStarter(bin, cfg.Sync, 0, filepath.Join(work, "serve.log")), stdout)
}

func parseArgs(args []string) (Config, error) {
	fs := flag.NewFlagSet("memrl bench maintain", flag.ContinueOnError)
	var cfg Config
	var create string
	fs.StringVar(&cfg.Base, "base", "../shared/data/sift1m-deb/base.bvecs", "base vectors (.fvecs or .bvecs); row r becomes memory id r+1")
	fs.StringVar(&cfg.Query, "query", "../shared/data/sift1m-deb/query.bvecs", "query vectors (.fvecs or .bvecs)")
	fs.IntVar(&cfg.N, "n", 1_000_000, "memories: the first N base vectors")
	fs.IntVar(&cfg.NQ, "nq", 300, "queries (their exact 10 nearest are computed here, by brute force, at each step)")
	fs.Float64Var(&cfg.RewardShare, "reward-share", 0.5, "share of the memories rewarded once (rewards drawn from -1 to 1), spreading Q")
	fs.StringVar(&cfg.Collection, "collection", "maint", "collection name")
	fs.StringVar(&create, "create", "", "extra MEM.CREATE arguments, space-separated (default none: the default index settings)")
	fs.StringVar(&cfg.Bin, "bin", "", "memrl binary to run as the server (default: this executable)")
	fs.StringVar(&cfg.Sync, "sync", "none", "the server's --sync")
	fs.StringVar(&cfg.Dir, "dir", "", "work folder for the server's data and log, kept afterwards (default: a temporary folder, removed)")
	fs.IntVar(&cfg.Clients, "clients", 4, "clients of the concurrent QPS column (each one query at a time)")
	fs.DurationVar(&cfg.Duration, "duration", 5*time.Second, "length of the concurrent QPS measure")
	fs.DurationVar(&cfg.WritersIdle, "writers-idle", 5*time.Second, "how long the writers run before compaction (their idle latency)")
	fs.DurationVar(&cfg.BuildWait, "build-wait", time.Hour, "the longest wait for the index builds the fill started")
	fs.Int64Var(&cfg.Seed, "seed", 1, "seed of the rewards and the writers")
	fs.StringVar(&cfg.JSON, "json", "", "also write the report as JSON to this file")
	if err := cliflag.Parse(fs, args, 0); err != nil {
		return cfg, err
	}
	if cfg.N < 2 || cfg.NQ < 1 || cfg.Clients < 1 || cfg.Duration <= 0 || cfg.WritersIdle <= 0 {
		return cfg, cliflag.Usagef("--n must be at least 2; --nq, --clients, --duration and --writers-idle positive")
	}
	if cfg.RewardShare < 0 || cfg.RewardShare > 1 {
		return cfg, cliflag.Usagef("--reward-share must be in [0, 1]")
	}
	cfg.CreateArgs = strings.Fields(create)
	return cfg, nil
}
