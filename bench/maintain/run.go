package maintain

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/memrl/memrl/bench/ann"
	"github.com/memrl/memrl/bench/serverann"
	"github.com/memrl/memrl/client"
)

// step is one row of the table: the state after a maintenance command.
type step struct {
	Step      string     `json:"step"`
	Memories  int64      `json:"memories"`
	DiskBytes int64      `json:"disk_bytes"`     // allocated, as du counts
	Apparent  int64      `json:"apparent_bytes"` // the files' sizes
	Retrieval *retrieval `json:"retrieval,omitempty"`
	// Seconds is the step's command's time as the client saw it (0: none).
	Seconds float64 `json:"seconds,omitempty"`
	Note    string  `json:"note,omitempty"`
	// Load is the machine's 1-minute load average when the step was
	// measured (the retrieval figures move with it on a shared machine).
	Load string `json:"load,omitempty"`
}

// report is everything a run measured.
type report struct {
	N             int               `json:"n"`
	Dim           int               `json:"dim"`
	NQ            int               `json:"nq"`
	Clients       int               `json:"clients"`
	FillSeconds   float64           `json:"fill_s"`
	Rewarded      int               `json:"rewarded"`
	RewardSeconds float64           `json:"reward_s"`
	BuildWaitS    float64           `json:"build_wait_s"`
	Index         string            `json:"index_before"`
	Steps         []step            `json:"steps"`
	WritersIdle   writerStats       `json:"writers_idle"`
	WritersDuring writerStats       `json:"writers_during_compaction"`
	Compact       map[string]string `json:"compact_reply,omitempty"`
}

// snapshotName is the snapshot taken before the prune.
const snapshotName = "before-prune"

// Run fills a fresh server started by start on work/data and measures
// the maintenance steps (see the package comment); it prints one table to
// out.
func Run(cfg Config, work string, start func(dir string) (serverann.Server, error), out io.Writer) error {
	_, err := run(cfg, work, start, out)
	return err
}

func run(cfg Config, work string, start func(dir string) (serverann.Server, error), out io.Writer) (*report, error) {
	ctx := context.Background()
	base, n, dim, err := ann.ReadVectors(cfg.Base, cfg.N)
	if err != nil {
		return nil, err
	}
	qx, nq, qdim, err := ann.ReadVectors(cfg.Query, cfg.NQ)
	if err != nil {
		return nil, err
	}
	if qdim != dim {
		return nil, fmt.Errorf("queries have dimension %d, base %d", qdim, dim)
	}
	queries := make([][]float32, nq)
	for i := range queries {
		queries[i] = qx[i*dim : (i+1)*dim]
	}
	row := func(r int) []float32 { return base[r*dim : (r+1)*dim] }
	data := filepath.Join(work, "data")
	if _, err := os.Stat(data); err == nil {
		return nil, fmt.Errorf("%s exists: the run needs a fresh data folder", data)
	}
	rep := &report{N: n, Dim: dim, NQ: nq, Clients: cfg.Clients}
	fmt.Fprintf(out, "data: %s, %d memories, %d queries, dim %d; server --sync %s\n", cfg.Base, n, nq, dim, cfg.Sync)

	srv, err := start(data)
	if err != nil {
		return nil, err
	}
	defer func() {
		if srv != nil {
			srv.Stop()
		}
	}()
	// go-redis gives up reading a reply after 3 s by default: a prune of
	// half a million memories or a compaction takes longer, so the
	// maintenance commands get half an hour.
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, Protocol: 2, ReadTimeout: 30 * time.Minute})
	defer rdb.Close()
	c, err := client.New(client.Options{Redis: rdb})
	if err != nil {
		return nil, err
	}
	do := func(args ...any) (any, error) { return c.Redis().Do(ctx, args...).Result() }

	create := []any{"MEM.CREATE", cfg.Collection, "DIM", dim, "METRIC", "L2"}
	for _, a := range cfg.CreateArgs {
		create = append(create, a)
	}
	if _, err := do(create...); err != nil {
		return nil, fmt.Errorf("%v: %w", create, err)
	}

	// Fill: row r is memory id r+1, MEM.MADD batches over 4 connections.
	t0 := time.Now()
	if err := fill(ctx, c, cfg.Collection, n, row, func(done int) {
		fmt.Fprintf(out, "  fill: %d memories in %.1fs\n", done, time.Since(t0).Seconds())
	}); err != nil {
		return nil, err
	}
	rep.FillSeconds = time.Since(t0).Seconds()
	fmt.Fprintf(out, "fill: %d memories (MEM.MADD, 1,000 a command, 4 connections) in %.1fs\n", n, rep.FillSeconds)

	// Spread Q: reward a share of the memories once each, rewards from -1
	// to 1 in steps of 0.1 (ids grouped by reward, several a command).
	rng := rand.New(rand.NewSource(cfg.Seed))
	t0 = time.Now()
	if rep.Rewarded, err = spreadQ(ctx, c, cfg.Collection, n, cfg.RewardShare, rng); err != nil {
		return nil, err
	}
	rep.RewardSeconds = time.Since(t0).Seconds()
	fmt.Fprintf(out, "rewards: %d memories rewarded once (MEM.REWARD, rewards -1 to 1) in %.1fs\n", rep.Rewarded, rep.RewardSeconds)

	// The index builds the fill started.
	t0 = time.Now()
	if rep.Index, err = waitBuilds(ctx, c, cfg.Collection, cfg.BuildWait); err != nil {
		return nil, err
	}
	rep.BuildWaitS = time.Since(t0).Seconds()
	fmt.Fprintf(out, "index builds done %.1fs after the rewards: %s\n", rep.BuildWaitS, rep.Index)

	w := &writers{c: c, coll: cfg.Collection, vecs: row, nvecs: n, rng: rng, added: map[int64][]float32{}}
	vec := func(id int64) []float32 {
		if id >= 1 && id <= int64(n) {
			return row(int(id - 1))
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.added[id]
	}
	measure := func(name string, seconds float64, note string) (*step, error) {
		s := step{Step: name, Seconds: seconds, Note: note}
		if s.Memories, err = c.Count(ctx, cfg.Collection); err != nil {
			return nil, err
		}
		// A checkpoint first, so that the log holds only what came after
		// it at every step (the log's size, not the data's, would
		// otherwise decide the differences).
		if err := c.Checkpoint(ctx, false); err != nil {
			return nil, fmt.Errorf("MEM.CHECKPOINT: %w", err)
		}
		if s.DiskBytes, s.Apparent, err = diskUse(data); err != nil {
			return nil, err
		}
		s.Load = loadAverage()
		ids, err := liveIDs(ctx, c, cfg.Collection)
		if err != nil {
			return nil, err
		}
		t0 := time.Now()
		truth := exactTop10(queries, ids, vec)
		exactS := time.Since(t0).Seconds()
		r, err := measureRetrieval(ctx, c, cfg.Collection, queries, truth, cfg.Clients, cfg.Duration)
		if err != nil {
			return nil, err
		}
		s.Retrieval = &r
		rep.Steps = append(rep.Steps, s)
		fmt.Fprintf(out, "%s: %d memories, %s on disk, recall@10 %.3f, %.0f QPS (1 client), %.0f QPS (%d clients); exact top 10 over %d live in %.1fs\n",
			name, s.Memories, human(s.DiskBytes), r.Recall10, r.QPS1, r.QPSN, cfg.Clients, len(ids), exactS)
		return &rep.Steps[len(rep.Steps)-1], nil
	}
	skip := func(name, note string, seconds float64) {
		rep.Steps = append(rep.Steps, step{Step: name, Seconds: seconds, Note: note})
		if note == "" {
			note = "took " + formatSeconds(seconds)
		}
		fmt.Fprintf(out, "%s: %s\n", name, note)
	}

	if _, err := measure("before", 0, ""); err != nil {
		return nil, err
	}

	// MEM.SNAPSHOT before the prune.
	snapshot := false
	t0 = time.Now()
	if _, err := do("MEM.SNAPSHOT", cfg.Collection, snapshotName); err != nil {
		if !unknownCommand(err) {
			return nil, fmt.Errorf("MEM.SNAPSHOT: %w", err)
		}
		skip("MEM.SNAPSHOT "+snapshotName, "not available: "+err.Error(), 0)
	} else {
		snapshot = true
		skip("MEM.SNAPSHOT "+snapshotName, "", time.Since(t0).Seconds())
	}

	// Prune half.
	keep := int64(n / 2)
	t0 = time.Now()
	pruned, err := c.Prune(ctx, cfg.Collection, client.PruneOptions{MaxCount: &keep})
	if err != nil {
		return nil, fmt.Errorf("MEM.PRUNE: %w", err)
	}
	if _, err := measure(fmt.Sprintf("after MEM.PRUNE MAXCOUNT %d", keep), time.Since(t0).Seconds(),
		fmt.Sprintf("pruned %d", pruned)); err != nil {
		return nil, err
	}

	// Writers, idle then during compaction.
	if w.targets, err = liveIDs(ctx, c, cfg.Collection); err != nil {
		return nil, err
	}
	stop := make(chan struct{})
	time.AfterFunc(cfg.WritersIdle, func() { close(stop) })
	if rep.WritersIdle, err = w.run(ctx, stop); err != nil {
		return nil, fmt.Errorf("writers: %w", err)
	}
	t0 = time.Now()
	reply, during, cerr := compactWithWriters(ctx, w, do, cfg.Collection)
	compactS := time.Since(t0).Seconds()
	switch {
	case cerr == nil:
		rep.WritersDuring = during
		rep.Compact = flatMap(reply)
		if _, err := measure("after MEM.COMPACT WAIT", compactS, compactNote(rep.Compact)); err != nil {
			return nil, err
		}
	case unknownCommand(cerr):
		skip("after MEM.COMPACT WAIT", "not available: "+cerr.Error(), 0)
	default:
		return nil, fmt.Errorf("MEM.COMPACT: %w", cerr)
	}

	// Roll back to before the prune.
	if snapshot {
		t0 = time.Now()
		changed, err := do("MEM.ROLLBACK", cfg.Collection, snapshotName)
		rollS := time.Since(t0).Seconds()
		switch {
		case err == nil:
			s, err := measure("after MEM.ROLLBACK "+snapshotName, rollS, fmt.Sprintf("changed %v", changed))
			if err != nil {
				return nil, err
			}
			s.Note += fmt.Sprintf("; count %d, %s", s.Memories, map[bool]string{true: "as before the prune", false: fmt.Sprintf("NOT %d as before the prune", n)}[s.Memories == int64(n)])
		case unknownCommand(err):
			skip("after MEM.ROLLBACK "+snapshotName, "not available: "+err.Error(), 0)
		default:
			return nil, fmt.Errorf("MEM.ROLLBACK: %w", err)
		}
		do("MEM.DELSNAPSHOT", cfg.Collection, snapshotName)
	} else {
		skip("after MEM.ROLLBACK "+snapshotName, "not available: no snapshot (MEM.SNAPSHOT was not available)", 0)
	}

	// With no snapshot left to pin them, prune half again and compact:
	// the space of the pruned rows is reclaimed.
	if cerr == nil {
		t0 = time.Now()
		pruned, err := c.Prune(ctx, cfg.Collection, client.PruneOptions{MaxCount: &keep})
		if err != nil {
			return nil, fmt.Errorf("MEM.PRUNE: %w", err)
		}
		pruneS := time.Since(t0).Seconds()
		t0 = time.Now()
		reply, during, err := compactWithWriters(ctx, w, do, cfg.Collection)
		if err != nil {
			return nil, fmt.Errorf("MEM.COMPACT: %w", err)
		}
		// This compaction reclaims the pruned rows (no snapshot pins
		// them), so it is the one whose writers' latencies mean
		// something: the first, with the snapshot pinning every pruned
		// row, frees nothing and returns at once.
		rep.WritersDuring = during
		if _, err := measure(fmt.Sprintf("no snapshot: MEM.PRUNE MAXCOUNT %d, then MEM.COMPACT WAIT", keep), time.Since(t0).Seconds(),
			fmt.Sprintf("pruned %d in %s; %s", pruned, formatSeconds(pruneS), compactNote(flatMap(reply)))); err != nil {
			return nil, err
		}
	}

	err = srv.Stop()
	srv = nil
	if err != nil {
		return nil, err
	}
	printTable(out, rep)
	if cfg.JSON != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(cfg.JSON, b, 0o644); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// loadAverage returns the 1-minute load average (/proc/loadavg), or "?".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}

// unknownCommand reports whether err is the server's "unknown command".
func unknownCommand(err error) bool {
	return err != nil && strings.Contains(err.Error(), "unknown command")
}

// flatMap reads a field/value reply as strings.
func flatMap(v any) map[string]string {
	m := map[string]string{}
	a, _ := v.([]any)
	for i := 0; i+1 < len(a); i += 2 {
		m[fmt.Sprint(a[i])] = fmt.Sprint(a[i+1])
	}
	return m
}

func compactNote(m map[string]string) string {
	return fmt.Sprintf("rows %s → %s, bytes %s → %s, server %s s", m["rows_before"], m["rows_after"], m["bytes_before"], m["bytes_after"], m["seconds"])
}

// fill adds rows 0..n-1 as memories 1..n with MEM.MADD, 1,000 a command
// over 4 connections, calling progress every tenth.
func fill(ctx context.Context, c *client.Client, coll string, n int, row func(int) []float32, progress func(done int)) error {
	const batch, conns = 1000, 4
	var mu sync.Mutex // guards next, done, nextReport and firstErr
	next, done, nextReport := 0, 0, n/10
	var firstErr error
	var wg sync.WaitGroup
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			items := make([]client.AddItem, 0, batch)
			for {
				mu.Lock()
				from := next
				next += batch
				stop := firstErr != nil
				mu.Unlock()
				if stop || from >= n {
					return
				}
				items = items[:0]
				for r := from; r < min(from+batch, n); r++ {
					id := int64(r + 1)
					items = append(items, client.AddItem{Vector: row(r), AddOptions: client.AddOptions{ID: &id}})
				}
				_, err := c.MAdd(ctx, coll, items)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = fmt.Errorf("MEM.MADD of rows %d…: %w", from, err)
				}
				done += len(items)
				if done >= nextReport && nextReport > 0 && done < n {
					progress(done)
					for nextReport <= done {
						nextReport += n / 10
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return firstErr
}

// spreadQ rewards share of the memories 1..n once each, with rewards -1 to
// 1 in steps of 0.1, and returns how many it rewarded.
func spreadQ(ctx context.Context, c *client.Client, coll string, n int, share float64, rng *rand.Rand) (int, error) {
	byLevel := make([][]client.Ref, 21)
	count := 0
	for id := 1; id <= n; id++ {
		if rng.Float64() < share {
			l := rng.Intn(21)
			byLevel[l] = append(byLevel[l], client.ID(int64(id)))
			count++
		}
	}
	const chunk = 500
	for l, refs := range byLevel {
		r := float64(l-10) / 10
		for i := 0; i < len(refs); i += chunk {
			if _, err := c.Reward(ctx, coll, r, refs[i:min(i+chunk, len(refs))]...); err != nil {
				return count, fmt.Errorf("MEM.REWARD: %w", err)
			}
		}
	}
	return count, nil
}

// waitBuilds waits until MEM.INFO's index shows no build running (no
// "building", no "retraining") twice in a row, half a second apart, and
// returns it.
func waitBuilds(ctx context.Context, c *client.Client, coll string, limit time.Duration) (string, error) {
	deadline := time.Now().Add(limit)
	quiet := 0
	for {
		in, err := c.Info(ctx, coll)
		if err != nil {
			return "", err
		}
		if strings.Contains(in.Index, "building") || strings.Contains(in.Index, "retraining") {
			quiet = 0
		} else if quiet++; quiet == 2 {
			return in.Index, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("index still building after %v: %s", limit, in.Index)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// liveIDs returns the collection's live ids (MEM.SCAN, 1,000 a page).
func liveIDs(ctx context.Context, c *client.Client, coll string) ([]int64, error) {
	var ids []int64
	for m, err := range c.ScanAll(ctx, coll, &client.ScanOptions{Count: 1000}) {
		if err != nil {
			return nil, fmt.Errorf("MEM.SCAN: %w", err)
		}
		ids = append(ids, m.ID)
	}
	return ids, nil
}

// compactWithWriters runs MEM.COMPACT coll WAIT while w's writers run,
// and returns the compaction's reply and the writers' latencies over it.
func compactWithWriters(ctx context.Context, w *writers, do func(args ...any) (any, error), coll string) (any, writerStats, error) {
	stop := make(chan struct{})
	var during writerStats
	var werr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		during, werr = w.run(ctx, stop)
	}()
	reply, cerr := do("MEM.COMPACT", coll, "WAIT")
	close(stop)
	wg.Wait()
	if werr != nil {
		return nil, during, fmt.Errorf("writers: %w", werr)
	}
	return reply, during, cerr
}
