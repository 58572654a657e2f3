package serverann

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/memrl/memrl/bench/ann"
	"github.com/memrl/memrl/internal/cliflag"
)

// Config is one run's settings; Main fills it from flags.
type Config struct {
	Base, Query, GT string
	NBase, NQ       int
	Collection      string
	CreateArgs      []string // appended to MEM.CREATE coll DIM d METRIC L2
	Bin             string   // memrl binary (default: this executable)
	Sync            string   // the server's --sync
	GOMAXPROCS      int      // the server's GOMAXPROCS; 0: Go's default
	Dir             string   // work folder; "" a temporary one, removed at the end
	FillConns       int
	Pipeline        int
	Clients         int           // clients of the concurrent rows
	Duration        time.Duration // length of each concurrent row
	Poll            time.Duration // how often INFO keyspace is read
	JSON            string
	SkipInProcess   bool
	UnixSocket      bool   // the server also listens on a Unix socket in the work folder, and the clients use it
	ServerCPUs      string // run the server under taskset -c ServerCPUs; "" anywhere
	ClientCPUs      string // pin this process to these CPUs while it drives the server; "" anywhere
}

// Main runs `memrl bench serverann` with args, reporting to stdout.
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
	work, cleanup, err := workDir(cfg.Dir)
	if err != nil {
		return err
	}
	defer cleanup()
	sock := ""
	if cfg.UnixSocket {
		sock = filepath.Join(work, "memrl.sock")
	}
	return Run(cfg, work, execStarter(bin, cfg.Sync, cfg.GOMAXPROCS, cfg.ServerCPUs, filepath.Join(work, "serve.log"), sock), stdout)
}

func parseArgs(args []string) (Config, error) {
	fs := flag.NewFlagSet("memrl bench serverann", flag.ContinueOnError)
	var cfg Config
	var create string
	fs.StringVar(&cfg.Base, "base", "", "base vectors (.fvecs or .bvecs); row r becomes memory id r")
	fs.StringVar(&cfg.Query, "query", "", "query vectors (.fvecs or .bvecs)")
	fs.StringVar(&cfg.GT, "gt", "", "ground truth (.ivecs, 0-based rows of base, best first)")
	fs.IntVar(&cfg.NBase, "nbase", 0, "use only the first N base vectors (the ground truth must match; default all)")
	fs.IntVar(&cfg.NQ, "nq", 2000, "use the first N queries (0: all)")
	fs.StringVar(&cfg.Collection, "collection", "sift", "collection name")
	fs.StringVar(&create, "create", "", "extra MEM.CREATE arguments, space-separated (default none: the default index settings)")
	fs.StringVar(&cfg.Bin, "bin", "", "memrl binary to run as the server (default: this executable)")
	fs.StringVar(&cfg.Sync, "sync", "none", "the server's --sync (none: acknowledged adds survive kill -9, not a machine crash)")
	fs.IntVar(&cfg.GOMAXPROCS, "server-gomaxprocs", 0, "GOMAXPROCS of the server (0: Go's default, the number of cores)")
	fs.StringVar(&cfg.Dir, "dir", "", "work folder for the server's data and log, kept afterwards (default: a temporary folder, removed)")
	fs.IntVar(&cfg.FillConns, "fill-conns", 4, "connections adding the base set")
	fs.IntVar(&cfg.Pipeline, "pipeline", 64, "MEM.ADDs in flight per fill connection")
	fs.IntVar(&cfg.Clients, "clients", 8, "clients of the concurrent rows (each one query at a time on its own connection)")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "length of each concurrent row")
	fs.DurationVar(&cfg.Poll, "poll", 100*time.Millisecond, "how often INFO keyspace is read to tell whether a build runs")
	fs.StringVar(&cfg.JSON, "json", "", "also write the rows as a JSON array to this file")
	fs.BoolVar(&cfg.SkipInProcess, "skip-inprocess", false, "do not run the queries in process at the end")
	fs.StringVar(&cfg.ServerCPUs, "server-cpus", "", "run the server on these CPUs only (taskset -c LIST, e.g. 0)")
	fs.StringVar(&cfg.ClientCPUs, "client-cpus", "", "pin the load generator to these CPUs while it drives the server (e.g. 1); the in-process rows run on all")
	fs.BoolVar(&cfg.UnixSocket, "unixsocket", false, "clients connect over a Unix socket (memrl serve --unixsocket) instead of loopback TCP")
	if err := cliflag.Parse(fs, args, 0); err != nil {
		return cfg, err
	}
	if cfg.Base == "" || cfg.Query == "" || cfg.GT == "" {
		return cfg, cliflag.Usagef("need --base, --query and --gt")
	}
	if cfg.FillConns < 1 || cfg.Pipeline < 1 || cfg.Clients < 1 || cfg.Duration <= 0 || cfg.Poll <= 0 {
		return cfg, cliflag.Usagef("--fill-conns, --pipeline, --clients, --duration and --poll must be positive")
	}
	cfg.CreateArgs = strings.Fields(create)
	return cfg, nil
}

// workDir returns dir (created), or a new temporary folder and a function
// that removes it.
func workDir(dir string) (string, func(), error) {
	if dir != "" {
		return dir, func() {}, os.MkdirAll(dir, 0o755)
	}
	d, err := os.MkdirTemp("", "memrl-serverann-")
	if err != nil {
		return "", nil, err
	}
	return d, func() { os.RemoveAll(d) }, nil
}

// loadQueries reads the data set: the base (float32s) and the query set.
func loadQueries(cfg Config) ([]float32, int, *querySet, error) {
	base, n, dim, err := ann.ReadVectors(cfg.Base, cfg.NBase)
	if err != nil {
		return nil, 0, nil, err
	}
	q, nq, qdim, err := ann.ReadVectors(cfg.Query, cfg.NQ)
	if err != nil {
		return nil, 0, nil, err
	}
	if qdim != dim {
		return nil, 0, nil, fmt.Errorf("queries have dimension %d, base %d", qdim, dim)
	}
	gt, err := ann.ReadIvecs(cfg.GT, nq)
	if err != nil {
		return nil, 0, nil, err
	}
	if len(gt) < nq {
		return nil, 0, nil, fmt.Errorf("ground truth has %d rows for %d queries", len(gt), nq)
	}
	qs := &querySet{}
	for i := range nq {
		if len(gt[i]) < 10 {
			return nil, 0, nil, fmt.Errorf("ground truth depth %d < 10", len(gt[i]))
		}
		for _, r := range gt[i][:10] {
			if r < 0 || int(r) >= n {
				return nil, 0, nil, fmt.Errorf("ground truth row %d names base row %d of %d (does --nbase match the ground truth?)", i, r, n)
			}
		}
		v := q[i*dim : (i+1)*dim]
		qs.vecs = append(qs.vecs, v)
		qs.blobs = append(qs.blobs, fp32(v))
		qs.gt = append(qs.gt, gt[i][:10])
	}
	return base, dim, qs, nil
}

// poller reads a collection's index state from INFO keyspace every
// interval, so that queries can be told apart by whether a build ran.
type poller struct {
	mu    sync.Mutex // guards state and err
	state string     // the keyspace's index=… value: flat, ivfpq, flat+building, ivfpq+building
	err   error
	stop  chan struct{}
	done  chan struct{}
}

func startPoller(addr, coll string, every time.Duration) (*poller, error) {
	c, err := dial(addr)
	if err != nil {
		return nil, err
	}
	p := &poller{stop: make(chan struct{}), done: make(chan struct{})}
	if err := p.poll(c, coll); err != nil {
		c.close()
		return nil, err
	}
	go func() {
		defer close(p.done)
		defer c.close()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				if err := p.poll(c, coll); err != nil {
					p.mu.Lock()
					p.err = err
					p.mu.Unlock()
					return
				}
			}
		}
	}()
	return p, nil
}

func (p *poller) poll(c *conn, coll string) error {
	st, err := indexState(c, coll)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.state = st
	p.mu.Unlock()
	return nil
}

// indexState returns the collection's index=… value from INFO keyspace.
func indexState(c *conn, coll string) (string, error) {
	reply, err := c.do("INFO", "keyspace")
	if err != nil {
		return "", err
	}
	line, err := infoField(reply, "coll_"+strings.ReplaceAll(coll, ":", "%3A"))
	if err != nil {
		return "", err
	}
	for _, kv := range strings.Split(line, ",") {
		if v, ok := strings.CutPrefix(kv, "index="); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("INFO keyspace: no index= in %q", line)
}

func (p *poller) building() bool { return strings.HasSuffix(p.current(), "+building") }

// current is the last state read, or "" once polling failed.
func (p *poller) current() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return ""
	}
	return p.state
}

func (p *poller) close() error {
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// memInfoIndex returns MEM.INFO's index field.
func memInfoIndex(addr, coll string) (string, error) {
	c, err := dial(addr)
	if err != nil {
		return "", err
	}
	defer c.close()
	reply, err := c.do("MEM.INFO", coll)
	if err != nil {
		return "", err
	}
	return infoField(reply, "index")
}

// builtLines returns the server's "IVF-PQ index … built on N memories in
// D" log lines in log, which tell when each build (and retrain) finished.
func builtLines(log string) []string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "built on") && strings.Contains(l, "IVF-PQ") {
			out = append(out, l)
		}
	}
	return out
}

var errNoRows = errors.New("no queries answered")
