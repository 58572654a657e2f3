package engine

import (
	"errors"
	"math"
	"math/rand"
	"reflect"
	"testing"
	"time"

	"github.com/memrl/memrl/engine/filter"
	"github.com/memrl/memrl/vfs"
)

// openPolicyDB opens a database on fs with the crash tests' options, clk
// as its clock and the pruner looking every interval (< 0: never), and
// collection "c" (dimension 4, L2, flat) in it.
func openPolicyDB(t *testing.T, fs *vfs.MemFS, clk *fakeClock, interval time.Duration, onPrune func(string, int)) (*DB, *Collection) {
	t.Helper()
	o := crashOpts(fs)
	o.Now, o.SweepInterval, o.PruneInterval, o.OnPrune = clk.Now, -1, interval, onPrune
	db, err := Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	c, err := db.Collection("c")
	if errors.Is(err, ErrNoCollection) {
		cfg := NewConfig(4)
		cfg.Metric = L2
		cfg.Index.Kind = IndexFlat
		if err = db.Create("c", cfg); err == nil {
			c, err = db.Collection("c")
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return db, c
}

// addQs adds memories 1..n with Q = id.
func addQs(t *testing.T, c *Collection, from, to int) {
	t.Helper()
	for i := from; i <= to; i++ {
		if _, err := c.Add(AddRequest{Vector: []float32{float32(i), 0, 0, 1}, ID: uint64(i), HasID: true, Q: float64(i), HasQ: true}); err != nil {
			t.Fatal(err)
		}
	}
}

func qBelow(q float64, every time.Duration) *PrunePolicy {
	return &PrunePolicy{Prune: PruneOptions{QBelow: q, HasQBelow: true}, Every: every}
}

// liveIDs returns the collection's live ids, ascending.
func policyLiveIDs(t *testing.T, c *Collection) []uint64 {
	t.Helper()
	var ids []uint64
	for id := uint64(1); id <= 40; id++ {
		if _, err := c.Get(id); err == nil {
			ids = append(ids, id)
		} else if !errors.Is(err, ErrNoMemory) {
			t.Fatal(err)
		}
	}
	return ids
}

// TestPrunePolicyRunsInBackground: the pruner goroutine applies a policy
// once it is due (the test waits on OnPrune, moving a fake clock), the
// pruned memories are gone (Get, Retrieve), the run is reported by
// PruneStatus, the next run waits another Every, and removing the policy
// stops it.
func TestPrunePolicyRunsInBackground(t *testing.T) {
	clk := newFakeClock()
	runs := make(chan [2]any, 16)
	db, c := openPolicyDB(t, vfs.NewMemFS(), clk, time.Millisecond, func(coll string, n int) { runs <- [2]any{coll, n} })
	defer db.Close()
	addQs(t, c, 1, 10)
	if err := c.SetPrunePolicy(qBelow(4, time.Minute)); err != nil {
		t.Fatal(err)
	}
	start := clk.Now()
	wait := func() [2]any {
		t.Helper()
		select {
		case r := <-runs:
			return r
		case <-time.After(20 * time.Second):
			t.Fatal("the pruner did not run")
		}
		return [2]any{}
	}
	// Not due before a minute: a round now runs nothing.
	clk.advance(59 * time.Second)
	if n, err := db.RunPrunePolicies(); err != nil || n != 0 {
		t.Fatalf("round before due: %d, %v", n, err)
	}
	if len(runs) != 0 {
		t.Fatalf("a run before the policy was due: %v", <-runs)
	}
	clk.advance(2 * time.Second)
	if r := wait(); r != [2]any{"c", 3} {
		t.Fatalf("run %v, want [c 3]", r)
	}
	if got := policyLiveIDs(t, c); !reflect.DeepEqual(got, []uint64{4, 5, 6, 7, 8, 9, 10}) {
		t.Fatalf("live after the run: %v", got)
	}
	res, err := c.Retrieve([]float32{1, 0, 0, 1}, RetrieveOptions{SearchOptions: SearchOptions{K1: 10}, K2: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.ID < 4 {
			t.Fatalf("retrieval returned pruned memory %d", r.ID)
		}
	}
	st, err := c.PruneStatus()
	if err != nil || st.Policy == nil || st.LastCount != 3 || !st.LastRun.Equal(start.Add(61*time.Second)) || !st.Since.Equal(start) {
		t.Fatalf("status %+v, %v", st, err)
	}
	// The next run is a minute after this one; memories added meanwhile
	// are pruned by it.
	addQs(t, c, 11, 11)
	if _, err := c.Reward(-100, []uint64{11}, nil); err != nil {
		t.Fatal(err)
	}
	clk.advance(30 * time.Second)
	if n, err := db.RunPrunePolicies(); err != nil || n != 0 || len(runs) != 0 {
		t.Fatalf("round half way: %d, %v", n, err)
	}
	clk.advance(31 * time.Second)
	if r := wait(); r != [2]any{"c", 1} {
		t.Fatalf("second run %v, want [c 1]", r)
	}
	// OFF: no more runs, whatever the time.
	if err := c.SetPrunePolicy(nil); err != nil {
		t.Fatal(err)
	}
	addQs(t, c, 1, 3)
	clk.advance(time.Hour)
	if n, err := db.RunPrunePolicies(); err != nil || n != 0 {
		t.Fatalf("round after OFF: %d, %v", n, err)
	}
	if got := policyLiveIDs(t, c); !reflect.DeepEqual(got, []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}) {
		t.Fatalf("live after OFF: %v", got)
	}
	select {
	case r := <-runs:
		t.Fatalf("a run after OFF: %v", r)
	default:
	}
	st, _ = c.PruneStatus()
	if st.Policy != nil || st.LastCount != 1 || st.LastRun.IsZero() {
		t.Fatalf("status after OFF: %+v (the last run stays reported)", st)
	}
	// OFF again changes nothing and logs nothing.
	if tk, err := c.SetPrunePolicyDeferred(nil); err != nil || tk != 0 {
		t.Fatalf("second OFF: %v, %v", tk, err)
	}
}

// TestPrunePolicyMaxCountAndFilter: a policy with MAXCOUNT and FILTER
// prunes exactly what MEM.PRUNE with the same options would.
func TestPrunePolicyMaxCountAndFilter(t *testing.T) {
	clk := newFakeClock()
	db, c := openPolicyDB(t, vfs.NewMemFS(), clk, -1, nil)
	defer db.Close()
	for i := 1; i <= 10; i++ {
		tenant := `{"t":"a"}`
		if i%2 == 0 {
			tenant = `{"t":"b"}`
		}
		if _, err := c.Add(AddRequest{Vector: []float32{float32(i), 0, 0, 1}, ID: uint64(i), HasID: true, Q: float64(i), HasQ: true, Attrs: []byte(tenant)}); err != nil {
			t.Fatal(err)
		}
	}
	e, err := filter.Parse(`.t == "b"`)
	if err != nil {
		t.Fatal(err)
	}
	p := &PrunePolicy{Prune: PruneOptions{MaxCount: 2, HasMaxCount: true, Filter: e}, Every: time.Second}
	if err := c.SetPrunePolicy(p); err != nil {
		t.Fatal(err)
	}
	clk.advance(time.Second)
	if n, err := db.RunPrunePolicies(); err != nil || n != 3 {
		t.Fatalf("run: %d, %v; want 3 (ids 2, 4, 6)", n, err)
	}
	if got := policyLiveIDs(t, c); !reflect.DeepEqual(got, []uint64{1, 3, 5, 7, 8, 9, 10}) {
		t.Fatalf("live: %v", got)
	}
}

// TestPrunePolicyRefusesBadPolicies: every policy MEM.PRUNE would refuse,
// and the policy's own bad values, are refused with the sentinel error
// and change nothing (the policy in force stays, nothing is logged).
func TestPrunePolicyRefusesBadPolicies(t *testing.T) {
	clk := newFakeClock()
	fs := vfs.NewMemFS()
	db, c := openPolicyDB(t, fs, clk, -1, nil)
	good := qBelow(1, time.Hour)
	if err := c.SetPrunePolicy(good); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		p    PrunePolicy
		want error
	}{
		{PrunePolicy{Every: time.Minute}, ErrNoCriterion},
		{PrunePolicy{Prune: PruneOptions{QBelow: math.NaN(), HasQBelow: true}, Every: time.Minute}, ErrBadNumber},
		{PrunePolicy{Prune: PruneOptions{QBelow: math.Inf(-1), HasQBelow: true}, Every: time.Minute}, ErrBadNumber},
		{PrunePolicy{Prune: PruneOptions{MinVisits: 1, HasMinVisits: true, HasOlder: true}, Every: time.Minute}, ErrBadParam},
		{PrunePolicy{Prune: PruneOptions{Older: -1, HasOlder: true}, Every: time.Minute}, ErrBadParam},
		{PrunePolicy{Prune: PruneOptions{Idle: MaxPruneAge + 1, HasIdle: true}, Every: time.Minute}, ErrBadParam},
		{PrunePolicy{Prune: PruneOptions{MaxCount: -1, HasMaxCount: true}, Every: time.Minute}, ErrBadParam},
		{PrunePolicy{Prune: PruneOptions{MaxCount: 1, HasMaxCount: true, DryRun: true}, Every: time.Minute}, ErrBadParam},
		{PrunePolicy{Prune: PruneOptions{MaxCount: 1, HasMaxCount: true}}, ErrBadParam},
		{PrunePolicy{Prune: PruneOptions{MaxCount: 1, HasMaxCount: true}, Every: time.Second - 1}, ErrBadParam},
		{PrunePolicy{Prune: PruneOptions{MaxCount: 1, HasMaxCount: true}, Every: MaxPruneAge + 1}, ErrBadParam},
	} {
		if err := c.SetPrunePolicy(&tc.p); !errors.Is(err, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.p, err, tc.want)
		}
	}
	st, _ := c.PruneStatus()
	if !reflect.DeepEqual(st.Policy, good) {
		t.Fatalf("a refused policy changed the one in force: %+v", st.Policy)
	}
	// Nothing refused reached the log: a crash and replay find the good one.
	db2, c2 := openPolicyDB(t, fs.Crash(vfs.DropUnsynced, rand.New(rand.NewSource(1))), clk, -1, nil)
	defer db2.Close()
	st2, _ := c2.PruneStatus()
	if !reflect.DeepEqual(st2.Policy, good) {
		t.Fatalf("after replay: %+v", st2.Policy)
	}
	db.Close()
}

// TestPrunePolicySurvivesRestart: the policy and its latest run come back
// after a crash (from the log) and after a clean restart (from the
// checkpoint, with nothing replayed), and the schedule goes on from the
// last run rather than from the restart.
func TestPrunePolicySurvivesRestart(t *testing.T) {
	e, err := filter.Parse(`.kind in ["a", "b"] and .n > 2`)
	if err != nil {
		t.Fatal(err)
	}
	want := &PrunePolicy{Prune: PruneOptions{QBelow: 4.5, HasQBelow: true, MinVisits: 0, HasMinVisits: true,
		Older: 10 * time.Second, HasOlder: true, Idle: 5 * time.Second, HasIdle: true, MaxCount: 1000, HasMaxCount: true,
		Filter: e}, Every: 90 * time.Second}
	simple := qBelow(4, 90*time.Second)
	for _, ckpt := range []string{"log", "checkpoint", "delta"} {
		t.Run(ckpt, func(t *testing.T) {
			clk := newFakeClock()
			fs := vfs.NewMemFS()
			db, c := openPolicyDB(t, fs, clk, -1, nil)
			addQs(t, c, 1, 10)
			if err := c.SetPrunePolicy(simple); err != nil {
				t.Fatal(err)
			}
			clk.advance(91 * time.Second)
			if n, err := db.RunPrunePolicies(); err != nil || n != 3 {
				t.Fatalf("run: %d, %v", n, err)
			}
			ranAt := clk.Now()
			if err := c.SetPrunePolicy(want); err != nil {
				t.Fatal(err)
			}
			setAt := clk.Now()
			var db2 *DB
			var c2 *Collection
			switch ckpt {
			case "log":
				db2, c2 = openPolicyDB(t, fs.Crash(vfs.DropUnsynced, rand.New(rand.NewSource(2))), clk, -1, nil)
			case "checkpoint":
				if err := db.Close(); err != nil {
					t.Fatal(err)
				}
				db2, c2 = openPolicyDB(t, fs, clk, -1, nil)
				if n := db2.Recovery.RecordsReplayed; n != 0 {
					t.Fatalf("%d records replayed: the state did not come from the checkpoint", n)
				}
			case "delta":
				// A full checkpoint before the policy changes, a delta
				// after (a collection's sections are written whole in
				// every delta), then a crash.
				if err := db.CheckpointFull(); err != nil {
					t.Fatal(err)
				}
				if err := c.SetPrunePolicy(nil); err != nil {
					t.Fatal(err)
				}
				if err := c.SetPrunePolicy(want); err != nil {
					t.Fatal(err)
				}
				if err := db.Checkpoint(); err != nil {
					t.Fatal(err)
				}
				db2, c2 = openPolicyDB(t, fs.Crash(vfs.DropUnsynced, rand.New(rand.NewSource(3))), clk, -1, nil)
			}
			defer db2.Close()
			st, err := c2.PruneStatus()
			if err != nil {
				t.Fatal(err)
			}
			if st.Policy == nil || st.Policy.Prune.Filter == nil || st.Policy.Prune.Filter.String() != e.String() {
				t.Fatalf("policy after restart: %+v", st.Policy)
			}
			got, w := *st.Policy, *want
			got.Prune.Filter, w.Prune.Filter = nil, nil
			if got != w {
				t.Fatalf("policy after restart: %+v, want %+v", got, w)
			}
			if !st.Since.Equal(setAt) || !st.LastRun.Equal(ranAt) || st.LastCount != 3 {
				t.Fatalf("status after restart: %+v", st)
			}
			if got := policyLiveIDs(t, c2); !reflect.DeepEqual(got, []uint64{4, 5, 6, 7, 8, 9, 10}) {
				t.Fatalf("live after restart: %v", got)
			}
			// Due 90 s after it was set, not 90 s after the restart.
			clk.advance(89 * time.Second)
			if n, err := db2.RunPrunePolicies(); err != nil || n != 0 {
				t.Fatalf("round before due: %d, %v", n, err)
			}
			clk.advance(2 * time.Second)
			if _, err := db2.RunPrunePolicies(); err != nil {
				t.Fatal(err)
			}
			if st, _ := c2.PruneStatus(); !st.LastRun.Equal(clk.Now()) {
				t.Fatalf("the restarted pruner did not run when due: %+v", st)
			}
			if ckpt != "checkpoint" {
				db.Close()
			}
		})
	}
}

// TestPrunePolicyCodec: records and sections round-trip, and every damaged
// form (a short body, unknown flags or kind, a turned-off policy with
// fields set, an invalid policy, a bad filter, a bad section version) is
// refused, never applied.
func TestPrunePolicyCodec(t *testing.T) {
	e, _ := filter.Parse(`.x > 1`)
	full := &PrunePolicy{Prune: PruneOptions{QBelow: -0.5, HasQBelow: true, MinVisits: 3, HasMinVisits: true,
		Older: time.Hour, HasOlder: true, Idle: time.Minute, HasIdle: true, MaxCount: 7, HasMaxCount: true, Filter: e},
		Every: 2 * time.Minute}
	for _, r := range []policyRec{
		{uid: 9, kind: policySet, at: 123, policy: full},
		{uid: 9, kind: policySet, at: 124, policy: qBelow(0, time.Second)},
		{uid: 9, kind: policySet, at: 125},
		{uid: 9, kind: policyRan, at: 126, count: 42},
	} {
		b := encodePolicyRec(r)
		got, err := decodePolicyRec(b)
		if err != nil {
			t.Fatalf("%+v: %v", r, err)
		}
		if (got.policy == nil) != (r.policy == nil) || (r.policy != nil && appendPolicy(nil, got.policy) == nil) {
			t.Fatalf("%+v: policy %+v", r, got.policy)
		}
		if string(encodePolicyRec(got)) != string(b) {
			t.Fatalf("%+v: does not round-trip", r)
		}
		for cut := 1; cut < len(b); cut++ {
			if _, err := decodePolicyRec(b[:cut]); !errors.Is(err, errBadRecord) {
				t.Fatalf("%+v cut at %d: %v", r, cut, err)
			}
		}
		if _, err := decodePolicyRec(append(b, 0)); !errors.Is(err, errBadRecord) {
			t.Fatalf("%+v with a byte more: %v", r, err)
		}
	}
	base := encodePolicyRec(policyRec{uid: 1, kind: policySet, at: 1, policy: full})
	const flagsAt = 1 + 8 + 1 + 8
	bad := func(name string, edit func(b []byte) []byte) {
		t.Helper()
		b := edit(append([]byte(nil), base...))
		if _, err := decodePolicyRec(b); !errors.Is(err, errBadRecord) {
			t.Errorf("%s: %v, want errBadRecord", name, err)
		}
	}
	bad("unknown kind", func(b []byte) []byte { b[9] = 3; return b })
	bad("unknown flag", func(b []byte) []byte { b[flagsAt] |= 0x80; return b })
	bad("no criterion", func(b []byte) []byte { b[flagsAt] = polOn | polFilter; return b })
	bad("off with fields", func(b []byte) []byte { b[flagsAt] = 0; return b })
	bad("NaN QBELOW", func(b []byte) []byte { le.PutUint64(b[flagsAt+1:], math.Float64bits(math.NaN())); return b })
	bad("EVERY 0", func(b []byte) []byte { le.PutUint64(b[flagsAt+1+8*5:], 0); return b })
	bad("bad filter", func(b []byte) []byte { b[len(b)-1] = '('; return b })
	bad("filter text without flag", func(b []byte) []byte { b[flagsAt] &^= polFilter; return b })

	// Sections.
	c := &Collection{name: "c"}
	c.prune = pruneState{policy: full, setAt: 5, lastAt: 6, lastCount: 7}
	data := c.encodePruneSectionLocked()
	st, err := decodePruneSection(data)
	if err != nil || st.setAt != 5 || st.lastAt != 6 || st.lastCount != 7 || st.policy == nil {
		t.Fatalf("section round trip: %+v, %v", st, err)
	}
	if (&Collection{}).encodePruneSectionLocked() != nil {
		t.Fatal("a collection with no policy and no run writes a section")
	}
	for name, b := range map[string][]byte{
		"version": append([]byte{2}, data[1:]...),
		"short":   data[:len(data)-1],
		"long":    append(append([]byte(nil), data...), 0),
		"empty":   nil,
	} {
		if err := c.loadPruneSectionLocked(b); !errors.Is(err, ErrCorruptCheckpoint) {
			t.Errorf("section %s: %v, want ErrCorruptCheckpoint", name, err)
		}
	}
}

// TestPrunePolicyDamagedSectionRefused: a checkpoint whose checksum is
// right but whose prune policy section does not decode is refused by Open
// (ErrCorruptCheckpoint), never opened without its policy.
func TestPrunePolicyDamagedSectionRefused(t *testing.T) {
	setTestSections(t)
	clk := newFakeClock()
	fs := vfs.NewMemFS()
	db, _ := openPolicyDB(t, fs, clk, -1, nil)
	testCollSections = func(c *Collection) []ckptSection {
		return []ckptSection{{Tag: sectPrunePolicy, Data: []byte{pruneSectVersion, 1, 2, 3}}}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	testCollSections = nil
	o := crashOpts(fs)
	if _, err := Open("/db", o); !errors.Is(err, ErrCorruptCheckpoint) {
		t.Fatalf("Open: %v, want ErrCorruptCheckpoint", err)
	}
}
