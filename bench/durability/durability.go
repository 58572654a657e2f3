// Package durability measures memrl's durable path in process: the fsync
// latency of the disk (the physical limit of SyncAlways), rewards per
// second through the engine with and without the log, recovery time for a
// log of N records, and how long writers stall while a checkpoint copies a
// large collection. Run it as `memrl bench durability`; the protocol-level
// figures come from `memrl bench rewards`.
package durability

import (
	"flag"
	"fmt"
	"github.com/memrl/memrl/internal/cliflag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/qtable"
	"github.com/memrl/memrl/wal"
)

// Main runs the measurements with command-line args, printing to out.
func Main(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("bench durability", flag.ContinueOnError)
	dir := fs.String("dir", os.TempDir(), "folder on the disk to measure")
	dur := fs.Duration("duration", 2*time.Second, "measuring time per throughput row")
	records := fs.String("recovery", "1000000", "log sizes (records) to measure recovery for, comma-separated")
	ckptMems := fs.Int("checkpoint-memories", 1000000, "memories in the collection a checkpoint copies while writers run")
	if err := cliflag.Parse(fs, args, 0); err != nil {
		return err
	}
	work, err := os.MkdirTemp(*dir, "memrl-durability-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	p50, p99, err := fsyncLatency(work, 500)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "fsync of a 4 KiB append: p50 %v, p99 %v (SyncAlways limit for one writer: %.0f/s)\n\n",
		p50, p99, float64(time.Second)/float64(p50))

	fmt.Fprintf(out, "%-34s %10s %14s\n", "in-process rewards", "goroutines", "rewards/s")
	rate := qtableOnly(2, *dur)
	fmt.Fprintf(out, "%-34s %10d %14.0f\n", "qtable only (no log: not durable)", 2, rate)
	for _, row := range []struct {
		policy wal.SyncPolicy
		g      int
	}{{wal.SyncNone, 2}, {wal.SyncAlways, 2}, {wal.SyncAlways, 64}, {wal.SyncAlways, 256}} {
		rate, err := engineRewards(filepath.Join(work, fmt.Sprint("r", row.policy, row.g)), row.policy, row.g, *dur)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%-34s %10d %14.0f\n", "engine, sync "+row.policy.String(), row.g, rate)
	}
	fmt.Fprintln(out)

	var sizes []int
	for _, s := range splitInts(*records) {
		sizes = append(sizes, s)
	}
	for _, n := range sizes {
		d, replayed, err := recovery(filepath.Join(work, fmt.Sprint("rec", n)), n)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "recovery of %d log records: %v (%d replayed, %.1f M records/s)\n", n, d.Round(time.Millisecond), replayed, float64(replayed)/d.Seconds()/1e6)
	}
	fmt.Fprintln(out)
	return checkpointStall(out, filepath.Join(work, "ckpt"), *ckptMems)
}

func fsyncLatency(dir string, n int) (time.Duration, time.Duration, error) {
	f, err := os.Create(filepath.Join(dir, "fsync"))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	buf := make([]byte, 4096)
	lats := make([]time.Duration, n)
	for i := range lats {
		t0 := time.Now()
		if _, err := f.Write(buf); err != nil {
			return 0, 0, err
		}
		if err := f.Sync(); err != nil {
			return 0, 0, err
		}
		lats[i] = time.Since(t0)
	}
	sort.Slice(lats, func(i, j int) bool { return lats[i] < lats[j] })
	return lats[n/2], lats[n*99/100], nil
}

// qtableOnly is the in-memory half of a reward with no log at all: what
// the engine would do with durability switched off. It is not an engine
// mode; it bounds what the log costs.
func qtableOnly(g int, dur time.Duration) float64 {
	t := qtable.New()
	const mems = 100000
	for id := uint64(1); id <= mems; id++ {
		t.Put(id, qtable.Entry{})
	}
	var total atomic.Int64
	var wg sync.WaitGroup
	deadline := time.Now().Add(dur)
	start := time.Now()
	for w := 0; w < g; w++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			n, x := int64(0), seed
			for time.Now().Before(deadline) {
				for i := 0; i < 1000; i++ {
					x = x*6364136223846793005 + 1442695040888963407
					t.Update(x>>40%mems+1, func(e *qtable.Entry) error {
						e.Q = qtable.TD(e.Q, 1, 0.3, 0, 0)
						e.Visits++
						return nil
					})
				}
				n += 1000
			}
			total.Add(n)
		}(uint64(w + 1))
	}
	wg.Wait()
	return float64(total.Load()) / time.Since(start).Seconds()
}

// openColl opens a database in dir with one collection "b" of mems
// memories, under policy. The memories are loaded under SyncNone (a
// million fsynced adds one at a time would take minutes), then the database
// is closed and reopened under policy.
func openColl(dir string, policy wal.SyncPolicy, mems int) (*engine.DB, *engine.Collection, error) {
	if policy != wal.SyncNone {
		db, _, err := openColl(dir, wal.SyncNone, mems)
		if err != nil {
			return nil, nil, err
		}
		if err := db.Close(); err != nil {
			return nil, nil, err
		}
		db, err = engine.Open(dir, engine.Options{Sync: policy, CheckpointInterval: -1, CheckpointBytes: -1, Logf: func(string, ...any) {}})
		if err != nil {
			return nil, nil, err
		}
		c, err := db.Collection("b")
		return db, c, err
	}
	db, err := engine.Open(dir, engine.Options{Sync: policy, CheckpointInterval: -1, CheckpointBytes: -1, Logf: func(string, ...any) {}})
	if err != nil {
		return nil, nil, err
	}
	cfg := engine.NewConfig(8)
	cfg.Index.Kind = engine.IndexFlat
	if err := db.Create("b", cfg); err != nil {
		db.Close()
		return nil, nil, err
	}
	c, _ := db.Collection("b")
	v := []float32{1, 2, 3, 4, 5, 6, 7, 8}
	for id := 1; id <= mems; id++ {
		v[0] = float32(id)
		if _, err := c.Add(engine.AddRequest{Vector: v, ID: uint64(id), HasID: true}); err != nil {
			db.Close()
			return nil, nil, err
		}
	}
	return db, c, nil
}

func engineRewards(dir string, policy wal.SyncPolicy, g int, dur time.Duration) (float64, error) {
	const mems = 100000
	db, c, err := openColl(dir, wal.SyncNone, mems)
	if err != nil {
		return 0, err
	}
	db.Close()
	if db, err = engine.Open(dir, engine.Options{Sync: policy, CheckpointInterval: -1, CheckpointBytes: -1, Logf: func(string, ...any) {}}); err != nil {
		return 0, err
	}
	defer db.Close()
	c, _ = db.Collection("b")
	var total atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Value
	deadline := time.Now().Add(dur)
	start := time.Now()
	for w := 0; w < g; w++ {
		wg.Add(1)
		go func(x uint64) {
			defer wg.Done()
			ids := []uint64{0}
			n := int64(0)
			for time.Now().Before(deadline) {
				x = x*6364136223846793005 + 1442695040888963407
				ids[0] = x>>40%mems + 1
				if _, err := c.Reward(1, ids, nil); err != nil {
					firstErr.Store(err)
					return
				}
				n++
			}
			total.Add(n)
		}(uint64(w + 1))
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return 0, err
	}
	return float64(total.Load()) / time.Since(start).Seconds(), nil
}

// recovery logs n reward records after a checkpoint, copies the folder
// while the database is open (what a kill -9 leaves, with the log written
// to the OS), and times opening the copy.
func recovery(dir string, n int) (time.Duration, int, error) {
	const mems = 10000
	db, c, err := openColl(dir, wal.SyncNone, mems)
	if err != nil {
		return 0, 0, err
	}
	if err := db.Checkpoint(); err != nil {
		return 0, 0, err
	}
	ids := []uint64{0}
	for i := 0; i < n; i++ {
		ids[0] = uint64(i%mems) + 1
		if _, err := c.Reward(1, ids, nil); err != nil {
			return 0, 0, err
		}
	}
	if _, err := c.Add(engine.AddRequest{Vector: []float32{1, 1, 1, 1, 1, 1, 1, 1}, ID: mems + 1, HasID: true}); err != nil {
		return 0, 0, err
	}
	// Under SyncNone every record is written to the OS before its call
	// returns (never fsynced), so the copy holds every record, as a real
	// kill would leave them; the replayed count says how many there were.
	time.Sleep(200 * time.Millisecond)
	cp := dir + ".copy"
	if out, err := exec.Command("cp", "-a", dir, cp).CombinedOutput(); err != nil {
		return 0, 0, fmt.Errorf("cp: %v: %s", err, out)
	}
	db.Close()
	os.Remove(filepath.Join(cp, "LOCK"))
	db2, err := engine.Open(cp, engine.Options{CheckpointInterval: -1, CheckpointBytes: -1, Logf: func(string, ...any) {}})
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(cp)
	defer db2.Close()
	return db2.Recovery.Duration, db2.Recovery.RecordsReplayed, nil
}

// checkpointStall loads mems memories, then measures the latency of one
// adder and one rewarder under the default sync policy (always), what a
// deployment sees: for a second without a checkpoint (the baseline: on 2
// cores the scheduler and the disk alone delay a writer by some
// milliseconds now and then), during a full checkpoint, and during delta
// checkpoints taken every 200 ms after it.
func checkpointStall(out io.Writer, dir string, mems int) error {
	db, c, err := openColl(dir, wal.SyncAlways, mems)
	if err != nil {
		return err
	}
	closed := false
	defer func() {
		if !closed {
			db.Close()
		}
	}()
	// phase: 0 warm-up, 1 baseline, 2 full checkpoint, 3 a second of
	// changes, 4 delta checkpoint, 5 stop. Each writer records its
	// latencies per phase in its own slices.
	const phases = 5
	var phase atomic.Int32
	var wg sync.WaitGroup
	var addLat, rewardLat [phases][]time.Duration
	writer := func(lat *[phases][]time.Duration, op func(i int)) {
		defer wg.Done()
		for i := 0; ; i++ {
			p := phase.Load()
			if p == phases {
				return
			}
			t0 := time.Now()
			op(i)
			lat[p] = append(lat[p], time.Since(t0))
		}
	}
	wg.Add(2)
	v := []float32{1, 1, 1, 1, 1, 1, 1, 1}
	go writer(&addLat, func(i int) {
		v[0] = float32(i)
		c.Add(engine.AddRequest{Vector: v, ID: uint64(mems + 1 + i), HasID: true})
	})
	ids := []uint64{0}
	go writer(&rewardLat, func(i int) {
		ids[0] = uint64(i%mems) + 1
		c.Reward(1, ids, nil)
	})
	time.Sleep(100 * time.Millisecond)
	phase.Store(1)
	time.Sleep(time.Second)
	phase.Store(2)
	t0 := time.Now()
	err = db.CheckpointFull()
	dFull := time.Since(t0)
	// Deltas: one every 200 ms, enough of them to see a few hundred writes
	// during them.
	var dDelta []time.Duration
	var changed int
	const deltas = 15 // the engine writes a full checkpoint after 16 deltas
	for i := 0; i < deltas && err == nil; i++ {
		phase.Store(3)
		before := len(addLat[3]) + len(rewardLat[3])
		time.Sleep(200 * time.Millisecond)
		changed += len(addLat[3]) + len(rewardLat[3]) - before
		phase.Store(4)
		t0 = time.Now()
		err = db.Checkpoint()
		dDelta = append(dDelta, time.Since(t0))
	}
	phase.Store(phases)
	wg.Wait()
	if err != nil {
		return err
	}
	slices.Sort(dDelta)
	fmt.Fprintf(out, "checkpoints of a collection of %d memories under load (sync always): full %v; %d deltas, one per 200 ms of changes (about %d memories each): median %v, slowest %v\n",
		mems, dFull.Round(time.Millisecond), deltas, changed/deltas, dDelta[len(dDelta)/2].Round(time.Microsecond), dDelta[len(dDelta)-1].Round(time.Microsecond))
	fmt.Fprintf(out, "%-38s %8s %10s %10s %10s\n", "writer latency", "ops", "p50", "p99", "max")
	for _, row := range []struct {
		name string
		lat  []time.Duration
	}{
		{"add, 1s without a checkpoint", addLat[1]}, {"add, during the full checkpoint", addLat[2]},
		{"add, during the delta checkpoints", addLat[4]},
		{"reward, 1s without a checkpoint", rewardLat[1]}, {"reward, during the full checkpoint", rewardLat[2]},
		{"reward, during the delta checkpoints", rewardLat[4]},
	} {
		l := row.lat
		sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
		q := func(f float64) time.Duration {
			if len(l) == 0 {
				return 0
			}
			return l[int(f*float64(len(l)-1))]
		}
		fmt.Fprintf(out, "%-38s %8d %10v %10v %10v\n", row.name, len(l),
			q(0.5).Round(time.Microsecond), q(0.99).Round(time.Microsecond), q(1).Round(time.Microsecond))
	}
	// Reopen from the chain the deltas left (Close adds one more delta).
	closed = true
	if err := db.Close(); err != nil {
		return err
	}
	db2, err := engine.Open(dir, engine.Options{Sync: wal.SyncAlways, CheckpointInterval: -1, CheckpointBytes: -1, Logf: func(string, ...any) {}})
	if err != nil {
		return err
	}
	defer db2.Close()
	r := db2.Recovery
	fmt.Fprintf(out, "open of the %d-memory database from a full checkpoint and %d deltas (%d log records replayed): %v\n",
		mems, r.DeltasApplied, r.RecordsReplayed, r.Duration.Round(time.Millisecond))
	return nil
}

func storeMax(a *atomic.Int64, v int64) {
	for {
		old := a.Load()
		if v <= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}

func splitInts(s string) []int {
	var out []int
	n, in := 0, false
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] >= '0' && s[i] <= '9' {
			n, in = n*10+int(s[i]-'0'), true
			continue
		}
		if in {
			out = append(out, n)
		}
		n, in = 0, false
	}
	return out
}
