package serverann

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// report is everything a run measured, for the table and the JSON file.
type report struct {
	Memories      int           `json:"memories"`
	FillSeconds   float64       `json:"fill_s"`
	FillRate      float64       `json:"fill_per_s"`
	IndexAtFill   string        `json:"index_after_fill"`
	BuildAtFill   bool          `json:"build_running_after_fill"`
	BuildWaitS    float64       `json:"builds_finished_s_after_fill"`
	IndexIdle     string        `json:"index_idle"`
	StopS         float64       `json:"clean_stop_s"`
	ListenMS      float64       `json:"restart_listening_ms"`
	FirstAnswerMS float64       `json:"restart_first_answer_ms"`
	IndexRestart  string        `json:"index_after_restart"`
	RebuiltAfter  []string      `json:"builds_after_restart"`
	Builds        []string      `json:"builds"`
	InProcOpenMS  float64       `json:"inprocess_open_first_answer_ms"`
	IndexInProc   string        `json:"index_inprocess"`
	Rows          []measurement `json:"rows"`
}

// Run fills a fresh server started by start on work/data with the base
// set and measures retrieval after the fill (while a retrain runs, if one
// does), once idle, after a clean restart, and in process; it prints one
// table to out.
func Run(cfg Config, work string, start starter, out io.Writer) error {
	_, err := run(cfg, work, start, out)
	return err
}

func run(cfg Config, work string, start starter, out io.Writer) (*report, error) {
	base, dim, qs, err := loadQueries(cfg)
	if err != nil {
		return nil, err
	}
	n := len(base) / dim
	data := filepath.Join(work, "data")
	if _, err := os.Stat(data); err == nil {
		return nil, fmt.Errorf("%s exists: the run needs a fresh data folder", data)
	}
	transport := "loopback TCP"
	if cfg.UnixSocket {
		transport = "a Unix socket"
	}
	if cfg.ServerCPUs != "" || cfg.ClientCPUs != "" {
		transport += fmt.Sprintf("; server on CPUs %q, clients on CPUs %q", cfg.ServerCPUs, cfg.ClientCPUs)
	}
	unpin := func() error { return nil }
	if cfg.ClientCPUs != "" {
		restore, err := pinProcess(cfg.ClientCPUs)
		if err != nil {
			return nil, err
		}
		unpin = func() error {
			err := restore()
			restore = func() error { return nil }
			return err
		}
		defer unpin()
	}
	fmt.Fprintf(out, "data: %s, %d base, %d queries, dim %d; server --sync %s, GOMAXPROCS %s; %d clients in the concurrent rows, over %s\n",
		cfg.Base, n, qs.n(), dim, cfg.Sync, gomaxprocsName(cfg.GOMAXPROCS), cfg.Clients, transport)
	rep := report{Memories: n}

	srv, err := start(data)
	if err != nil {
		return nil, err
	}
	stopped := false
	defer func() {
		if !stopped {
			srv.Stop()
		}
	}()
	c, err := dial(srv.Addr())
	if err != nil {
		return nil, err
	}
	createArgs := append([]string{"MEM.CREATE", cfg.Collection, "DIM", fmt.Sprint(dim), "METRIC", "L2"}, cfg.CreateArgs...)
	if _, err := c.do(createArgs...); err != nil {
		c.close()
		return nil, fmt.Errorf("%s: %w", strings.Join(createArgs, " "), err)
	}
	c.close()

	// Fill, reporting progress and the index state every tenth.
	pc, err := dial(srv.Addr())
	if err != nil {
		return nil, err
	}
	fillStart := time.Now()
	nextReport := n / 10
	var progressMu chanMutex = make(chanMutex, 1)
	fillDur, err := fill(srv.Addr(), cfg.Collection, base, dim, cfg.FillConns, cfg.Pipeline, func(done int) {
		if !progressMu.tryLock() {
			return
		}
		defer progressMu.unlock()
		if done >= nextReport && nextReport > 0 {
			st, _ := indexState(pc, cfg.Collection)
			fmt.Fprintf(out, "  fill: %7d memories in %5.1fs, index %s\n", done, time.Since(fillStart).Seconds(), st)
			for nextReport <= done {
				nextReport += n / 10
			}
		}
	})
	pc.close()
	if err != nil {
		return nil, err
	}
	rep.FillSeconds, rep.FillRate = fillDur.Seconds(), float64(n)/fillDur.Seconds()
	if rep.IndexAtFill, err = memInfoIndex(srv.Addr(), cfg.Collection); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "fill: %d MEM.ADD FP32 over %d connections, %d in flight each: %.1fs, %.0f adds/s; MEM.INFO index: %s\n",
		n, cfg.FillConns, cfg.Pipeline, rep.FillSeconds, rep.FillRate, rep.IndexAtFill)
	fillEnd := time.Now()

	pl, err := startPoller(srv.Addr(), cfg.Collection, cfg.Poll)
	if err != nil {
		return nil, err
	}
	resp := newRespSearcher(srv.Addr(), cfg.Collection, qs)
	serverCPU := func() (time.Duration, error) { return procCPU(srv.PID()) }
	measure := func(phase string, keep func() bool) error {
		idx, err := memInfoIndex(srv.Addr(), cfg.Collection)
		if err != nil {
			return err
		}
		for _, clients := range []int{1, cfg.Clients} {
			count, dur := qs.n(), time.Duration(0)
			if clients > 1 {
				count, dur = 0, cfg.Duration
			}
			m, err := runPhase(phase, qs, clients, count, dur, resp, keep, serverCPU)
			if err != nil {
				return err
			}
			m.Index = idx
			rep.Rows = append(rep.Rows, m)
			printRow(out, m)
		}
		return nil
	}

	// During the builds the fill started and that still run: the first
	// (searches are exact meanwhile) and the retrains (searches use the
	// previous index). Each state is measured once; a query counts only if
	// the state was the same at its start and end.
	rep.BuildAtFill = pl.building()
	measured := map[string]bool{}
	for st := pl.current(); strings.HasSuffix(st, "+building"); st = pl.current() {
		if measured[st] {
			time.Sleep(cfg.Poll)
			continue
		}
		measured[st] = true
		phase := "during retrain"
		if strings.HasPrefix(st, "flat") {
			phase = "during 1st build"
		}
		fmt.Fprintf(out, "%s: index %s; measuring while it runs (rows end when it does)\n", phase, st)
		if err := measure(phase, func() bool { return pl.current() == st }); err != nil {
			return nil, err
		}
	}
	if !rep.BuildAtFill {
		fmt.Fprintln(out, "no build was running when the fill ended: no \"during\" rows")
	}
	rep.BuildWaitS = time.Since(fillEnd).Seconds()
	if err := pl.close(); err != nil {
		return nil, err
	}
	if rep.BuildAtFill {
		fmt.Fprintf(out, "builds finished %.1fs after the fill ended\n", rep.BuildWaitS)
	}

	// Idle, at the index the retrain left.
	if err := measure("idle", nil); err != nil {
		return nil, err
	}
	rep.IndexIdle = rep.Rows[len(rep.Rows)-1].Index
	rep.Builds = builtLines(srv.Log())

	// Clean restart: time to the first answer, then the same rows.
	t0 := time.Now()
	err = srv.Stop()
	stopped = true
	if err != nil {
		return nil, err
	}
	rep.StopS = time.Since(t0).Seconds()
	logBefore := len(srv.Log())
	t0 = time.Now()
	if srv, err = start(data); err != nil {
		return nil, err
	}
	stopped = false
	rep.ListenMS = float64(time.Since(t0)) / 1e6
	s, err := newRespSearcher(srv.Addr(), cfg.Collection, qs)()
	if err != nil {
		return nil, err
	}
	_, err = s.search(0, nil)
	s.close()
	if err != nil {
		return nil, err
	}
	rep.FirstAnswerMS = float64(time.Since(t0)) / 1e6
	resp = newRespSearcher(srv.Addr(), cfg.Collection, qs)
	if pl, err = startPoller(srv.Addr(), cfg.Collection, cfg.Poll); err != nil {
		return nil, err
	}
	building := pl.building()
	fmt.Fprintf(out, "restart: clean stop %.1fs; listening %.0f ms after start, first answer %.0f ms after start; retrain running: %v\n",
		rep.StopS, rep.ListenMS, rep.FirstAnswerMS, building)
	if err := measure("after restart", nil); err != nil {
		return nil, err
	}
	rep.IndexRestart = rep.Rows[len(rep.Rows)-1].Index
	building = building || pl.building()
	if err := pl.close(); err != nil {
		return nil, err
	}
	if log := srv.Log(); len(log) >= logBefore {
		rep.RebuiltAfter = builtLines(log[logBefore:])
	}
	err = srv.Stop()
	stopped = true
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "after restart: MEM.INFO index %s; a build ran or was running: %v; builds logged since the restart: %d\n",
		rep.IndexRestart, building || len(rep.RebuiltAfter) > 0, len(rep.RebuiltAfter))

	// In process: the same folder, index and queries through the engine,
	// on every CPU.
	if err := unpin(); err != nil {
		return nil, err
	}
	if !cfg.SkipInProcess {
		t0 = time.Now()
		ip, err := openInProcess(data, cfg.Collection, qs)
		if err != nil {
			return nil, err
		}
		es, _ := ip.newSearcher()
		if _, err := es.search(0, nil); err != nil {
			ip.close()
			return nil, err
		}
		rep.InProcOpenMS = float64(time.Since(t0)) / 1e6
		rep.IndexInProc = ip.index()
		// As many goroutines as processors: more only queue (they never
		// wait for a network), which is the most QPS the process can give.
		for _, clients := range []int{1, runtime.GOMAXPROCS(0)} {
			count, dur := qs.n(), time.Duration(0)
			if clients > 1 {
				count, dur = 0, cfg.Duration
			}
			m, err := runPhase("in process", qs, clients, count, dur, ip.newSearcher, nil, selfCPU)
			if err != nil {
				ip.close()
				return nil, err
			}
			m.Index = rep.IndexInProc
			rep.Rows = append(rep.Rows, m)
			printRow(out, m)
		}
		if err := ip.close(); err != nil {
			return nil, err
		}
	}

	printReport(out, &rep)
	if cfg.JSON != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(cfg.JSON, b, 0o644); err != nil {
			return nil, err
		}
	}
	return &rep, nil
}

// chanMutex is a lock that can be tried: progress reports are skipped
// rather than waited for.
type chanMutex chan struct{}

func (m chanMutex) tryLock() bool {
	select {
	case m <- struct{}{}:
		return true
	default:
		return false
	}
}

func (m chanMutex) unlock() { <-m }

func gomaxprocsName(n int) string {
	if n <= 0 {
		return "default"
	}
	return fmt.Sprint(n)
}
