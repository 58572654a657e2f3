package engine

import (
	"errors"
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/memrl/memrl/vfs"
	"github.com/memrl/memrl/wal"
)

// memState is everything a client can read of one memory.
type memState struct {
	Q, LastReward, Mean float64
	Visits              uint64
	Created, Updated    int64
	Payload, Vec        string
	Attrs, Key          string
	Expires             int64
}

// scanState reads every memory of c through Scan, and checks that Get
// and key lookups agree with it.
func scanState(t *testing.T, c *Collection) map[uint64]memState {
	t.Helper()
	out := map[uint64]memState{}
	for cur := uint64(0); ; {
		page, next, err := c.Scan(cur, ScanOptions{Count: MaxScanCount, WithPayload: true, WithVector: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, mi := range page {
			var x int64
			if !mi.Expires.IsZero() {
				x = mi.Expires.UnixNano()
			}
			out[mi.ID] = memState{Q: mi.Q, LastReward: mi.LastReward, Mean: mi.MeanReward, Visits: mi.Visits,
				Created: mi.Created.UnixNano(), Updated: mi.Updated.UnixNano(), Payload: string(mi.Payload),
				Vec: fmt.Sprint(mi.Vector), Attrs: string(mi.Attrs), Key: mi.Key, Expires: x}
		}
		if next == 0 {
			break
		}
		cur = next
	}
	for id, s := range out {
		mi, err := c.Get(id)
		if err != nil || mi.Q != s.Q || string(mi.Attrs) != s.Attrs || string(mi.Payload) != s.Payload {
			t.Fatalf("Get(%d): %+v, %v; scan: %+v", id, mi, err, s)
		}
		if s.Key != "" {
			if mi, err := c.GetRef(ByKey(s.Key)); err != nil || mi.ID != id {
				t.Fatalf("key %q: %d, %v; want %d", s.Key, mi.ID, err, id)
			}
		}
	}
	return out
}

// collState reads the visible state of c as scanState does, and checks
// that Count and an exhaustive retrieval agree with it (so a ghost that
// leaked into any of them fails the test). c's vectors have 4 dimensions.
func collState(t *testing.T, c *Collection) map[uint64]memState {
	t.Helper()
	out := scanState(t, c)
	if n, err := c.Count(); err != nil || n != len(out) {
		t.Fatalf("Count %d, %v; scan found %d", n, err, len(out))
	}
	if len(out) > 0 {
		opt := NewRetrieveOptions()
		opt.K1, opt.K2 = len(out)+8, len(out)+8
		res, err := c.Retrieve([]float32{1, 0, 0, 0}, opt)
		if err != nil {
			t.Fatal(err)
		}
		got := map[uint64]bool{}
		for _, r := range res {
			got[r.ID] = true
		}
		if len(got) != len(out) {
			t.Fatalf("retrieval of everything returned %d memories, scan %d", len(got), len(out))
		}
		for id := range got {
			if _, ok := out[id]; !ok {
				t.Fatalf("retrieval returned memory %d, which scan does not", id)
			}
		}
	}
	return out
}

func diffState(want, got map[uint64]memState) string {
	for id, w := range want {
		g, ok := got[id]
		if !ok {
			return fmt.Sprintf("memory %d missing (want %+v)", id, w)
		}
		if g != w {
			return fmt.Sprintf("memory %d: got %+v, want %+v", id, g, w)
		}
	}
	for id := range got {
		if _, ok := want[id]; !ok {
			return fmt.Sprintf("memory %d present, not wanted", id)
		}
	}
	return ""
}

func snapVec(rng *rand.Rand) []float32 {
	return []float32{rng.Float32() + 0.1, rng.Float32(), rng.Float32(), rng.Float32()}
}

// TestRollbackModel runs random adds, rewards, deletes, prunes, attribute
// changes, snapshots, rollbacks, snapshot deletes, checkpoints, clean
// reopens and crash reopens, and checks after every rollback that the
// visible state equals exactly the one recorded when its snapshot was
// taken, and after every reopen that nothing changed.
func TestRollbackModel(t *testing.T) {
	for seed := int64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { rollbackModel(t, seed, 400) })
	}
}

func rollbackModel(t *testing.T, seed int64, steps int) {
	rng := rand.New(rand.NewSource(seed))
	clk := newFakeClock()
	fs := vfs.NewMemFS()
	opts := Options{Now: clk.Now, SweepInterval: -1}
	db, c := openAttrsDB(t, fs, opts)
	defer func() { db.Close() }()
	snaps := map[string]map[uint64]memState{}
	var ids []uint64
	seq := 0
	for step := 0; step < steps; step++ {
		clk.advance(time.Millisecond)
		switch k := rng.Intn(100); {
		case k < 30:
			req := AddRequest{Vector: snapVec(rng), Payload: []byte(fmt.Sprint("p", step))}
			if rng.Intn(2) == 0 {
				req.Attrs = []byte(fmt.Sprintf(`{"g":%d}`, rng.Intn(3)))
			}
			if rng.Intn(3) == 0 {
				req.Key = fmt.Sprint("k", step)
			}
			id, err := c.Add(req)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		case k < 50 && len(ids) > 0:
			id := ids[rng.Intn(len(ids))]
			if _, err := c.Reward(rng.Float64()*2-1, []uint64{id}, nil); err != nil && !errors.Is(err, ErrNoMemory) {
				t.Fatal(err)
			}
		case k < 60 && len(ids) > 0:
			if _, err := c.Delete([]uint64{ids[rng.Intn(len(ids))]}); err != nil {
				t.Fatal(err)
			}
		case k < 63:
			_, tk, err := c.Prune(PruneOptions{HasQBelow: true, QBelow: -0.05})
			if err == nil && tk != 0 {
				err = db.WaitDurable(tk)
			}
			if err != nil {
				t.Fatal(err)
			}
		case k < 68 && len(ids) > 0:
			err := c.SetAttrs(ByID(ids[rng.Intn(len(ids))]), []byte(fmt.Sprintf(`{"g":%d,"s":%d}`, rng.Intn(3), step)))
			if err != nil && !errors.Is(err, ErrNoMemory) {
				t.Fatal(err)
			}
		case k < 76:
			seq++
			name := fmt.Sprint("s", seq)
			if err := c.Snapshot(name); err != nil {
				t.Fatal(err)
			}
			snaps[name] = collState(t, c)
		case k < 86 && len(snaps) > 0:
			names := slices.Sorted(maps.Keys(snaps))
			name := names[rng.Intn(len(names))]
			if _, err := c.Rollback(name); err != nil {
				t.Fatalf("step %d: rollback %s: %v", step, name, err)
			}
			if d := diffState(snaps[name], collState(t, c)); d != "" {
				t.Fatalf("step %d: after rollback to %s: %s", step, name, d)
			}
		case k < 89 && len(snaps) > 0:
			names := slices.Sorted(maps.Keys(snaps))
			name := names[rng.Intn(len(names))]
			if ok, err := c.DeleteSnapshot(name); err != nil || !ok {
				t.Fatalf("delete %s: %v %v", name, ok, err)
			}
			delete(snaps, name)
		case k < 92:
			if err := db.Checkpoint(); err != nil {
				t.Fatal(err)
			}
		case k < 96:
			before := collState(t, c)
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			db, c = openAttrsDB(t, fs, opts)
			if d := diffState(before, collState(t, c)); d != "" {
				t.Fatalf("step %d: after reopen: %s", step, d)
			}
		default:
			before := collState(t, c)
			db.Close()
			fs, db = crashOpen2(t, fs, opts, seed+int64(step))
			var err error
			if c, err = db.Collection("c"); err != nil {
				t.Fatal(err)
			}
			if d := diffState(before, collState(t, c)); d != "" {
				t.Fatalf("step %d: after crash: %s", step, d)
			}
		}
		list, err := c.Snapshots()
		if err != nil || len(list) != len(snaps) {
			t.Fatalf("step %d: %d snapshots listed (%v), want %d", step, len(list), err, len(snaps))
		}
		for _, s := range list {
			if _, ok := snaps[s.Name]; !ok || s.Memories != len(snaps[s.Name]) || s.Damage != "" {
				t.Fatalf("step %d: listed %+v", step, s)
			}
		}
	}
	// Every snapshot left still rolls back exactly, after a restart.
	db.Close()
	db, c = openAttrsDB(t, fs, opts)
	for name, want := range snaps {
		if _, err := c.Rollback(name); err != nil {
			t.Fatal(err)
		}
		if d := diffState(want, collState(t, c)); d != "" {
			t.Fatalf("final rollback to %s: %s", name, d)
		}
	}
}

// TestRollbackThroughIndex: memories deleted after a snapshot of an IVF-PQ
// collection are tombstoned in the index (never retrieved), and come back
// in retrievals through the index after the rollback, also after a
// restart (index reloaded from its file).
func TestRollbackThroughIndex(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Dim: 32, Metric: L2, Alpha: 0.3, Index: IndexConfig{NList: 16, TrainThreshold: 2000}}
	opts := Options{Sync: wal.SyncNone, CheckpointInterval: -1, Logf: t.Logf}
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { db.Close() }()
	if err := db.Create("ix", cfg); err != nil {
		t.Fatal(err)
	}
	c, _ := db.Collection("ix")
	vecs, deleted, del := snapshotThenDelete(t, c, rand.New(rand.NewSource(3)), 5)
	if r := recallAt1(t, c, vecs, deleted); r < 0.95 { // fails if a deleted memory is retrieved
		t.Fatalf("recall@1 of the rest %.3f", r)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if db, err = Open(dir, opts); err != nil {
		t.Fatal(err)
	}
	c, _ = db.Collection("ix")
	if info, _ := c.Info(); info.Index == "flat" {
		t.Fatalf("index not reloaded: %s", info.Index)
	}
	if n, err := c.Rollback("s"); err != nil || n != len(del) {
		t.Fatalf("rollback: %d, %v; want %d revived", n, err, len(del))
	}
	if r := recallAt1(t, c, vecs, nil); r < 0.95 {
		t.Fatalf("recall@1 after the rollback %.3f", r)
	}
	hit := 0
	for id := range deleted {
		opt := NewRetrieveOptions()
		opt.K1, opt.K2, opt.Lambda = 10, 1, 0
		res, err := c.Retrieve(vecs[id], opt)
		if err != nil {
			t.Fatal(err)
		}
		if len(res) > 0 && res[0].ID == id {
			hit++
		}
	}
	if float64(hit) < 0.95*float64(len(deleted)) {
		t.Fatalf("revived memories found first %d of %d times", hit, len(deleted))
	}
}

// snapshotThenDelete adds 2,500 clustered vectors of dimension 32 to c
// (ids 1 to 2500), waits for its index, takes snapshot "s", then deletes
// every every-th memory from id 1. It returns every memory's vector, the
// deleted ids as a set and as a list.
func snapshotThenDelete(t *testing.T, c *Collection, rng *rand.Rand, every uint64) (map[uint64][]float32, map[uint64]bool, []uint64) {
	t.Helper()
	vecs := map[uint64][]float32{}
	for _, v := range clustered(rng, 2500, 32) {
		id, err := c.Add(AddRequest{Vector: v})
		if err != nil {
			t.Fatal(err)
		}
		vecs[id] = v
	}
	waitIndexed(t, c)
	if err := c.Snapshot("s"); err != nil {
		t.Fatal(err)
	}
	deleted := map[uint64]bool{}
	var del []uint64
	for id := uint64(1); id <= 2500; id += every {
		deleted[id] = true
		del = append(del, id)
	}
	if _, err := c.Delete(del); err != nil {
		t.Fatal(err)
	}
	return vecs, deleted, del
}
