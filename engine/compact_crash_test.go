package engine

import (
	"fmt"
	"math/rand"
	"sort"
	"testing"
	"time"

	"github.com/memrl/memrl/vfs"
)

// Crash tests of compaction, over the crash suite's workload and oracle
// (crash_kth_test.go, crash_model_test.go): the workload runs, every
// collection is compacted, the workload goes on; the power goes out at
// the k-th mutating file operation, for every k from shortly before the
// first compaction to shortly after the last (every one with
// MEMRL_CRASH_LONG=1, else about 150 spread over them), in each crash
// mode. Recovery must give exactly the acknowledged state (a compaction
// changes no memory, so it is never "in flight"), with no deleted memory
// back: checkRecovered compares every memory of the models and the
// collection's count, and a scan must list only the models' ids.

const (
	compactCrashBefore = 160 // workload operations before the compactions
	compactCrashAfter  = 60  // and after
)

// compactWorkload runs the workload of seed on db with compactions in the
// middle. It returns the acknowledged model, the in-flight one (nil if
// none) and the file operations made when the compactions began and
// ended (meaningful when nothing failed).
func compactWorkload(db *DB, fs *vfs.MemFS, seed int64) (acked, inflight model, begin, end int64, err error) {
	g := newGen(seed)
	acked = model{}
	step := func() error {
		o := g.next(acked)
		next := acked.clone()
		next.apply(o)
		if err := execOp(db, o); err != nil {
			inflight = next
			return fmt.Errorf("%v: %w", o, err)
		}
		acked = next
		return nil
	}
	for i := 0; i < compactCrashBefore; i++ {
		if err := step(); err != nil {
			return acked, inflight, 0, 0, err
		}
	}
	begin = fs.MutatingOps()
	names := make([]string, 0, len(acked))
	for n := range acked {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c, err := db.Collection(n)
		if err != nil {
			return acked, nil, begin, 0, err
		}
		if _, err := c.Compact(); err != nil {
			return acked, nil, begin, 0, fmt.Errorf("compact %s: %w", n, err)
		}
	}
	end = fs.MutatingOps()
	for i := 0; i < compactCrashAfter; i++ {
		if err := step(); err != nil {
			return acked, inflight, begin, end, err
		}
	}
	return acked, nil, begin, end, nil
}

// checkScanOnly checks that a scan of every collection lists only ids of
// the models: a deleted memory must not come back.
func checkScanOnly(db *DB, acked, inflight model) error {
	for _, name := range db.List() {
		c, err := db.Collection(name)
		if err != nil {
			return err
		}
		for cur := uint64(0); ; {
			page, next, err := c.Scan(cur, ScanOptions{Count: 64})
			if err != nil {
				return err
			}
			for _, m := range page {
				_, a := acked[name].mems[m.ID]
				i := false
				if inflight != nil && inflight[name] != nil {
					_, i = inflight[name].mems[m.ID]
				}
				if !a && !i {
					return fmt.Errorf("collection %q: scan lists memory %d, which no model holds", name, m.ID)
				}
			}
			if next == 0 {
				break
			}
			cur = next
		}
	}
	return nil
}

func compactCrashOnce(t *testing.T, seed, k int64, mode vfs.CrashMode) {
	t.Helper()
	fs := vfs.NewMemFS()
	fs.PowerOffAt(k)
	db, err := Open("/db", crashOpts(fs))
	if err != nil {
		if fs.PoweredOff() {
			return
		}
		t.Fatal(err)
	}
	acked, inflight, _, _, werr := compactWorkload(db, fs, seed)
	if werr != nil && !fs.PoweredOff() {
		t.Fatalf("seed %d k %d: %v before the power-off", seed, k, werr)
	}
	db.Close()
	crashed := fs.Crash(mode, rand.New(rand.NewSource(seed^k<<8^int64(mode))))
	what := fmt.Sprintf("seed %d, power off at op %d, %v, failed: %v", seed, k, mode, werr)
	db2, err := Open("/db", crashOpts(crashed))
	if err != nil {
		t.Fatalf("%s: recovery failed: %v", what, err)
	}
	if err := checkRecovered(db2, acked, inflight); err != nil {
		db2.Close()
		t.Fatalf("%s: %v", what, err)
	}
	if err := checkScanOnly(db2, acked, inflight); err != nil {
		db2.Close()
		t.Fatalf("%s: %v", what, err)
	}
	// The recovered database compacts again and reopens to the same state.
	for _, n := range db2.List() {
		c, _ := db2.Collection(n)
		if _, err := c.Compact(); err != nil {
			t.Fatalf("%s: compacting %s after recovery: %v", what, n, err)
		}
	}
	if err := db2.Close(); err != nil {
		t.Fatalf("%s: close after recovery: %v", what, err)
	}
	db3, err := Open("/db", crashOpts(crashed))
	if err != nil {
		t.Fatalf("%s: reopen: %v", what, err)
	}
	defer db3.Close()
	if err := checkRecovered(db3, acked, inflight); err != nil {
		t.Fatalf("%s: after a compaction and reopen: %v", what, err)
	}
	if err := checkScanOnly(db3, acked, inflight); err != nil {
		t.Fatalf("%s: after a compaction and reopen: %v", what, err)
	}
}

// TestCrashDuringCompaction crashes at every k-th file operation of the
// compactions (and a few before and after), in every crash mode.
func TestCrashDuringCompaction(t *testing.T) {
	old := compactChunk
	compactChunk = 8 // many chunks: crash points between them
	defer func() { compactChunk = old }()
	const seed = 20261201
	fs := vfs.NewMemFS()
	db, err := Open("/db", crashOpts(fs))
	if err != nil {
		t.Fatal(err)
	}
	acked, _, begin, end, err := compactWorkload(db, fs, seed)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// The workload without a crash: clean close and reopen.
	db2, err := Open("/db", crashOpts(fs.Crash(vfs.DropUnsynced, rand.New(rand.NewSource(1)))))
	if err != nil {
		t.Fatal(err)
	}
	if err := checkRecovered(db2, acked, nil); err != nil {
		t.Fatal(err)
	}
	db2.Close()

	from, to := max(begin-20, 1), end+40
	step := max((to-from)/150, 1)
	if crashLong() {
		step = 1
	}
	if shortSweep() { // sweep_test.go
		step = max((to-from)/10, 1)
	}
	start := time.Now()
	points := 0
	for k := from; k <= to; k += step {
		for _, mode := range []vfs.CrashMode{vfs.DropUnsynced, vfs.KeepRandomPrefix, vfs.TearLastSector} {
			compactCrashOnce(t, seed, k, mode)
			points++
		}
	}
	t.Logf("compactions span file operations %d-%d; %d crash points checked in %v", begin, end, points, time.Since(start).Round(time.Millisecond))
}
