package engine

import (
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memrl/memrl/wal"
)

// clustered returns n vectors of dim around 32 random centres.
func clustered(rng *rand.Rand, n, dim int) [][]float32 {
	centres := make([][]float32, 32)
	for i := range centres {
		centres[i] = make([]float32, dim)
		for j := range centres[i] {
			centres[i][j] = rng.Float32() * 10
		}
	}
	out := make([][]float32, n)
	for i := range out {
		c := centres[rng.Intn(len(centres))]
		v := make([]float32, dim)
		for j := range v {
			v[j] = c[j] + float32(rng.NormFloat64())
		}
		out[i] = v
	}
	return out
}

func waitIndexed(t *testing.T, c *Collection) Info {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		info, err := c.Info()
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(info.Index, "ivfpq") {
			return info
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("index not built within 60s")
	return Info{}
}

// recallAt1 is the share of vecs (by id) whose nearest memory is itself.
func recallAt1(t *testing.T, c *Collection, vecs map[uint64][]float32, skip map[uint64]bool) float64 {
	t.Helper()
	hit, n := 0, 0
	for id, v := range vecs {
		if skip[id] {
			continue
		}
		opt := NewRetrieveOptions()
		opt.K1, opt.K2, opt.Lambda = 10, 10, 0
		res, err := c.Retrieve(v, opt)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if skip[r.ID] {
				t.Fatalf("deleted memory %d retrieved", r.ID)
			}
		}
		n++
		if len(res) > 0 && res[0].ID == id {
			hit++
		}
	}
	return float64(hit) / float64(n)
}

func TestIndexBuildsSearchesAndSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Dim: 32, Metric: L2, Alpha: 0.3, Index: IndexConfig{NList: 16, TrainThreshold: 2000}}
	db, err := Open(dir, Options{Sync: wal.SyncNone, CheckpointInterval: -1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Create("ix", cfg); err != nil {
		t.Fatal(err)
	}
	c, _ := db.Collection("ix")
	rng := rand.New(rand.NewSource(3))
	vecs := map[uint64][]float32{}
	for _, v := range clustered(rng, 3000, 32) {
		id, err := c.Add(AddRequest{Vector: v})
		if err != nil {
			t.Fatal(err)
		}
		vecs[id] = v
	}
	info := waitIndexed(t, c)
	t.Logf("index: %s", info.Index)
	// Adds after the build go into the index and are found.
	for _, v := range clustered(rng, 500, 32) {
		id, _ := c.Add(AddRequest{Vector: v})
		vecs[id] = v
	}
	deleted := map[uint64]bool{}
	for id := uint64(1); id <= 3500; id += 7 {
		deleted[id] = true
	}
	var del []uint64
	for id := range deleted {
		del = append(del, id)
	}
	if _, err := c.Delete(del); err != nil {
		t.Fatal(err)
	}
	if r := recallAt1(t, c, vecs, deleted); r < 0.95 {
		t.Fatalf("recall@1 through the index %.3f", r)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "collections", "0000000000000001", "ivfpq", "ivfpq.idx")); err != nil {
		t.Fatalf("index not saved: %v", err)
	}

	// Reopen: the saved index is used at once.
	db, err = Open(dir, Options{Sync: wal.SyncNone, CheckpointInterval: -1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	c, _ = db.Collection("ix")
	if info, _ := c.Info(); !strings.HasPrefix(info.Index, "ivfpq") || !strings.Contains(info.Index, "rows=3500") {
		t.Fatalf("after reopen: index %q", info.Index)
	}
	if r := recallAt1(t, c, vecs, deleted); r < 0.95 {
		t.Fatalf("recall@1 after reopen %.3f", r)
	}
	db.Close()

	// A damaged index file is refused and rebuilt, never trusted.
	path := filepath.Join(dir, "collections", "0000000000000001", "ivfpq", "ivfpq.idx")
	b, _ := os.ReadFile(path)
	b[len(b)/2] ^= 0xff
	b[100] ^= 0xff
	os.WriteFile(path, b, 0o644)
	var logs strings.Builder
	db, err = Open(dir, Options{Sync: wal.SyncNone, CheckpointInterval: -1, Logf: func(f string, a ...any) {
		logs.WriteString(f)
		t.Logf(f, a...)
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, _ = db.Collection("ix")
	waitIndexed(t, c)
	if r := recallAt1(t, c, vecs, deleted); r < 0.95 {
		t.Fatalf("recall@1 after rebuild %.3f", r)
	}
}

// TestIndexNewerThanLogIsDiscarded: an index file describing rows the log
// does not have (as after a crash that lost unsynced adds) is not used.
func TestIndexNewerThanLogIsDiscarded(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	vecs := clustered(rng, 3000, 16)
	cfg := Config{Dim: 16, Metric: L2, Index: IndexConfig{NList: 8, TrainThreshold: 1000}}
	build := func(dir string, n int) {
		db, err := Open(dir, Options{Sync: wal.SyncNone, CheckpointInterval: -1, Logf: t.Logf})
		if err != nil {
			t.Fatal(err)
		}
		db.Create("ix", cfg)
		c, _ := db.Collection("ix")
		for _, v := range vecs[:n] {
			c.Add(AddRequest{Vector: v})
		}
		waitIndexed(t, c)
		db.Close()
	}
	big, small := t.TempDir(), t.TempDir()
	build(big, 3000)
	build(small, 1500)
	rel := filepath.Join("collections", "0000000000000001", "ivfpq", "ivfpq.idx")
	b, err := os.ReadFile(filepath.Join(big, rel))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(small, rel), b, 0o644)
	db, err := Open(small, Options{Sync: wal.SyncNone, CheckpointInterval: -1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, _ := db.Collection("ix")
	info := waitIndexed(t, c)
	if !strings.Contains(info.Index, "rows=1500") {
		t.Fatalf("index %q: the stale 3000-row file was used", info.Index)
	}
}

func TestFlatIndexNeverTrains(t *testing.T) {
	db, _ := openTemp(t, Options{Sync: wal.SyncNone})
	c := mustColl(t, db, "f", Config{Dim: 8, Metric: L2, Index: IndexConfig{Kind: IndexFlat, TrainThreshold: 100}})
	for _, v := range clustered(rand.New(rand.NewSource(1)), 500, 8) {
		c.Add(AddRequest{Vector: v})
	}
	time.Sleep(100 * time.Millisecond)
	if info, _ := c.Info(); info.Index != "flat" {
		t.Fatalf("FLAT collection index %q", info.Index)
	}
}
