package engine

import (
	"fmt"
	"math/rand"
	"reflect"
	"testing"
	"time"

	"github.com/memrl/memrl/vfs"
)

// policyCrashState is what the policy crash workload has acknowledged:
// the policy in force (nil: none), whether the run was acknowledged, and
// the live ids.
type policyCrashState struct {
	policy *PrunePolicy
	ran    bool
	live   []uint64
}

// TestPrunePolicyCrashAtEveryOp: a workload that sets a policy, lets the
// pruner run it, replaces it, checkpoints and turns it off is crashed at
// every mutating file operation, in every crash mode; the recovered
// database holds the last acknowledged state or the one in flight (the
// policy, the run's record and deletes), never anything else, and opens
// again to the same state.
func TestPrunePolicyCrashAtEveryOp(t *testing.T) {
	total := policyCrashRun(t, vfs.NewMemFS(), -1, vfs.DropUnsynced)
	t.Logf("%d file operations", total)
	if total < 20 {
		t.Fatalf("the workload made only %d file operations", total)
	}
	for k := int64(1); k <= total; k++ {
		for _, mode := range []vfs.CrashMode{vfs.DropUnsynced, vfs.KeepRandomPrefix, vfs.TearLastSector} {
			policyCrashRun(t, vfs.NewMemFS(), k, mode)
		}
	}
}

// policyCrashRun runs the workload on fs, powered off at operation k (< 0:
// never), then crashes the disk in mode, recovers and checks. It returns
// the mutating operations the workload made.
func policyCrashRun(t *testing.T, fs *vfs.MemFS, k int64, mode vfs.CrashMode) int64 {
	t.Helper()
	if k > 0 {
		fs.PowerOffAt(k)
	}
	clk := newFakeClock()
	o := crashOpts(fs)
	o.Now, o.SweepInterval, o.PruneInterval = clk.Now, -1, -1
	first := qBelow(4, time.Minute)
	second := &PrunePolicy{Prune: PruneOptions{MaxCount: 2, HasMaxCount: true}, Every: 2 * time.Minute}
	all := []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	acked := policyCrashState{}
	var inflight *policyCrashState
	steps := []struct {
		next policyCrashState
		do   func(db *DB, c *Collection) error
	}{
		{policyCrashState{policy: first, live: all}, func(db *DB, c *Collection) error { return c.SetPrunePolicy(first) }},
		{policyCrashState{policy: first, ran: true, live: all[3:]}, func(db *DB, c *Collection) error {
			clk.advance(61 * time.Second)
			n, err := db.RunPrunePolicies()
			if err == nil && n != 3 {
				return fmt.Errorf("run pruned %d, want 3", n)
			}
			return err
		}},
		{policyCrashState{policy: second, ran: true, live: all[3:]}, func(db *DB, c *Collection) error { return c.SetPrunePolicy(second) }},
		{policyCrashState{policy: second, ran: true, live: all[3:]}, func(db *DB, c *Collection) error { return db.Checkpoint() }},
		{policyCrashState{ran: true, live: all[3:]}, func(db *DB, c *Collection) error { return c.SetPrunePolicy(nil) }},
	}
	db, err := Open("/db", o)
	if err != nil {
		if fs.PoweredOff() {
			return fs.MutatingOps()
		}
		t.Fatal(err)
	}
	func() {
		cfg := NewConfig(4)
		cfg.Metric, cfg.Index.Kind = L2, IndexFlat
		if err := db.Create("c", cfg); err != nil {
			return // nothing acknowledged: the collection may be missing
		}
		c, err := db.Collection("c")
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= 10; i++ {
			if _, err := c.Add(AddRequest{Vector: []float32{float32(i), 0, 0, 1}, ID: uint64(i), HasID: true, Q: float64(i), HasQ: true}); err != nil {
				return
			}
			acked.live = append(acked.live, uint64(i))
		}
		for _, s := range steps {
			if err := s.do(db, c); err != nil {
				next := s.next
				inflight = &next
				return
			}
			acked = s.next
		}
	}()
	if k > 0 && !fs.PoweredOff() && inflight != nil {
		t.Fatalf("k %d: a step failed before the power-off", k)
	}
	db.Close()
	ops := fs.MutatingOps()
	if k < 0 {
		return ops
	}
	what := fmt.Sprintf("power off at op %d of %d, %v", k, ops, mode)
	crashed := fs.Crash(mode, rand.New(rand.NewSource(k<<4^int64(mode))))
	for round := 0; round < 2; round++ { // recover, then open the recovered database again
		db2, err := Open("/db", o2(o, crashed))
		if err != nil {
			t.Fatalf("%s: recovery failed: %v", what, err)
		}
		got := policyCrashState{live: []uint64{}}
		if c, err := db2.Collection("c"); err == nil {
			st, err := c.PruneStatus()
			if err != nil {
				t.Fatal(err)
			}
			got.policy, got.ran = st.Policy, !st.LastRun.IsZero()
			if got.ran && st.LastCount != 3 {
				t.Fatalf("%s: last run count %d", what, st.LastCount)
			}
			got.live = policyLiveIDs(t, c)
		}
		match := func(want policyCrashState) bool {
			if !reflect.DeepEqual(got.policy, want.policy) || got.ran != want.ran {
				return false
			}
			// Adds in flight may or may not be there; everything
			// acknowledged is.
			if len(want.live) == 0 && len(got.live) == 0 {
				return true
			}
			return reflect.DeepEqual(got.live, want.live)
		}
		ok := match(acked)
		if !ok && inflight != nil {
			ok = match(*inflight)
		}
		// The run in flight: its deletes may be kept without its record
		// (the run is then redone when due).
		if !ok && inflight != nil && inflight.ran && !acked.ran {
			ok = match(policyCrashState{policy: acked.policy, live: inflight.live})
		}
		// An add in flight: the acknowledged ids plus possibly the next.
		if !ok && inflight == nil && len(acked.live) < 10 && got.policy == nil && !got.ran {
			ok = reflect.DeepEqual(got.live, append(append([]uint64{}, acked.live...), uint64(len(acked.live)+1))) ||
				reflect.DeepEqual(got.live, acked.live)
		}
		if !ok {
			t.Fatalf("%s (round %d): recovered %+v (policy %+v); acknowledged %+v (policy %+v), in flight %+v",
				what, round, got, got.policy, acked, acked.policy, inflight)
		}
		if err := db2.Close(); err != nil {
			t.Fatalf("%s: Close after recovery: %v", what, err)
		}
	}
	return ops
}

// o2 is o on fs.
func o2(o Options, fs *vfs.MemFS) Options {
	o.FS = fs
	return o
}
