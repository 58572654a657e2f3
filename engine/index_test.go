package engine

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/cespare/xxhash/v2"

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
	// A bound on waiting, not a timing assertion: a build under -race on a
	// loaded 2-core machine has taken over a minute.
	deadline := time.Now().Add(5 * time.Minute)
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
	t.Fatal("index not built within 5 minutes")
	return Info{}
}

// waitIndexSaved waits until the background save of c's index has
// landed (the build returns before it): a test that inspects the index
// file must not race that save.
func waitIndexSaved(t *testing.T, c *Collection) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Minute) // a bound, not a timing assertion
	for time.Now().Before(deadline) {
		c.mu.RLock()
		done := c.ivf != nil && !c.saving && c.savedRows > 0
		c.mu.RUnlock()
		if done {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("index not saved within 5 minutes")
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
	// The default code at DIM 32: 14 sub-spaces of 4 bits (ivfpq.DefaultM).
	indexBuildsSearchesAndSurvivesRestart(t, IndexConfig{NList: 16, TrainThreshold: 2000}, "ivfpq nlist=16 pqm=14 pqbits=4")
}

// TestIndex8BitSurvivesRestart: the same with 8-bit codes asked for
// (PQBITS 8 alone takes the 8-bit default PQM, 8 at DIM 32).
func TestIndex8BitSurvivesRestart(t *testing.T) {
	indexBuildsSearchesAndSurvivesRestart(t, IndexConfig{NList: 16, PQBits: 8, TrainThreshold: 2000}, "ivfpq nlist=16 pqm=8 pqbits=8")
}

// TestUnequalSubspaceIndexSurvivesRestart: the same with a PQM that does
// not divide DIM (32 as 12 sub-spaces of 3 and 2 dimensions, 4-bit codes),
// whose index file is format version 3.
func TestUnequalSubspaceIndexSurvivesRestart(t *testing.T) {
	indexBuildsSearchesAndSurvivesRestart(t, IndexConfig{NList: 16, PQM: 12, PQBits: 4, TrainThreshold: 2000}, "ivfpq nlist=16 pqm=12 pqbits=4")
}

// indexBuildsSearchesAndSurvivesRestart fills a DIM 32 collection with
// index configuration ic past its training threshold, checks recall
// through the index (whose MEM.INFO text starts with want), after a
// restart and after a damaged index file is rebuilt.
func indexBuildsSearchesAndSurvivesRestart(t *testing.T, ic IndexConfig, want string) {
	dir := t.TempDir()
	cfg := Config{Dim: 32, Metric: L2, Alpha: 0.3, Index: ic}
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
	if !strings.HasPrefix(info.Index, want) {
		t.Fatalf("index %q, want %q…", info.Index, want)
	}
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
	if info, _ := c.Info(); !strings.HasPrefix(info.Index, want) || !strings.Contains(info.Index, "rows=3500") {
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

// TestRetrainAfterRestartIsDecidedAsWithout: an index trained at N, its
// collection grown to just under retrainFactor·N and reopened, retrains
// once it passes retrainFactor·N, as it would have without the restart
// (not only at retrainFactor times the size it had at the restart).
func TestRetrainAfterRestartIsDecidedAsWithout(t *testing.T) {
	const n0 = 1000
	dir := t.TempDir()
	opts := Options{Sync: wal.SyncNone, CheckpointInterval: -1, Logf: t.Logf}
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Create("ix", Config{Dim: 16, Metric: L2, Index: IndexConfig{TrainThreshold: n0}}); err != nil {
		t.Fatal(err)
	}
	c, _ := db.Collection("ix")
	vecs := clustered(rand.New(rand.NewSource(5)), retrainFactor*n0+50, 16)
	for _, v := range vecs[:n0] {
		if _, err := c.Add(AddRequest{Vector: v}); err != nil {
			t.Fatal(err)
		}
	}
	first := waitIndexed(t, c).Index
	c.mu.RLock()
	trained := c.trainedOn
	c.mu.RUnlock()
	if trained != n0 {
		t.Fatalf("trained on %d memories, want %d", trained, n0)
	}
	for _, v := range vecs[n0 : retrainFactor*n0-10] {
		if _, err := c.Add(AddRequest{Vector: v}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db, err = Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, _ = db.Collection("ix")
	info, _ := c.Info()
	if !strings.HasPrefix(info.Index, "ivfpq") || strings.Contains(info.Index, "building") {
		t.Fatalf("after reopen at %d memories: index %q, want the saved one", info.Count, info.Index)
	}
	c.mu.RLock()
	trained = c.trainedOn
	c.mu.RUnlock()
	if trained != n0 {
		t.Fatalf("after reopen: trained on %d memories, want %d", trained, n0)
	}
	for _, v := range vecs[retrainFactor*n0-10:] {
		if _, err := c.Add(AddRequest{Vector: v}); err != nil {
			t.Fatal(err)
		}
	}
	// The add that reached retrainFactor·n0 started the build.
	c.mu.RLock()
	started := c.building || c.trainedOn > n0
	c.mu.RUnlock()
	if !started {
		t.Fatalf("no retrain at %d memories after a restart; trained on %d", len(vecs), n0)
	}
	// A bound on waiting, not a timing assertion: a build under -race on a
	// loaded 2-core machine has taken over a minute.
	deadline := time.Now().Add(5 * time.Minute)
	for {
		c.mu.RLock()
		trained = c.trainedOn
		c.mu.RUnlock()
		if trained >= retrainFactor*n0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("retrain not finished within 60s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	info, _ = c.Info()
	t.Logf("trained at %d: %s; retrained at %d: %s", n0, first, trained, info.Index)
}

// TestVersion1IndexFileTrainingSize: an index file of ivfpq format version
// 1 did not record its training size. Opened, it is taken as trained at the
// collection's size when its NList is what that size calls for, and as due
// for a retrain when it is smaller (trained at a quarter of the size or less).
// The collection is IP over vectors not of unit norm, whose index stores no
// L2 terms, so its saved file has the layout version 1 had (an L2 index is
// saved as ivfpq format version 4, with 16-bit terms, which version 1 did
// not have) and relabelling it as version 1 makes a real version 1 file.
func TestVersion1IndexFileTrainingSize(t *testing.T) {
	const n0 = 1000
	vecs := clustered(rand.New(rand.NewSource(6)), retrainFactor*n0, 16)
	opts := Options{Sync: wal.SyncNone, CheckpointInterval: -1, Logf: t.Logf}
	for _, tc := range []struct {
		n       int  // memories at the restart
		retrain bool // a retrain is due at open
	}{{n0 + 100, false}, {retrainFactor*n0 - 10, true}} {
		dir := t.TempDir()
		db, err := Open(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		// PQM 8 divides DIM 16: version 1 files predate unequal sub-spaces.
		db.Create("ix", Config{Dim: 16, Metric: IP, Index: IndexConfig{TrainThreshold: n0, PQM: 8, PQBits: 4}})
		c, _ := db.Collection("ix")
		for i, v := range vecs[:tc.n] {
			if _, err := c.Add(AddRequest{Vector: v}); err != nil {
				t.Fatal(err)
			}
			if i == n0-1 {
				waitIndexed(t, c)
			}
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		// Rewrite the saved file as version 1 wrote it.
		path := filepath.Join(dir, "collections", "0000000000000001", "ivfpq", "ivfpq.idx")
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		binary.LittleEndian.PutUint32(b[8:], 1)
		clear(b[100:120])
		binary.LittleEndian.PutUint64(b[120:], xxhash.Sum64(b[:120]))
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}

		db, err = Open(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		c, _ = db.Collection("ix")
		info, _ := c.Info()
		c.mu.RLock()
		building, trained := c.building, c.trainedOn
		c.mu.RUnlock()
		if !strings.HasPrefix(info.Index, "ivfpq") {
			t.Fatalf("%d memories: version 1 file not used: index %q", tc.n, info.Index)
		}
		if building != tc.retrain {
			t.Errorf("%d memories, %s: retrain started %v, want %v (trained on %d)", tc.n, info.Index, building, tc.retrain, trained)
		}
		if !tc.retrain && trained != tc.n {
			t.Errorf("%d memories: trained on %d, want %d", tc.n, trained, tc.n)
		}
		db.Close()
	}
}

// TestDefaultsRecallOnHeldOutQueries: a collection left at every index
// default (only TRAIN lowered, so that it trains at a few thousand
// memories) answers queries drawn apart from its memories with recall@10
// >= 0.95 against the exact top 10, without the caller choosing NPROBE.
func TestDefaultsRecallOnHeldOutQueries(t *testing.T) {
	const n, nq, dim, k = 8000, 200, 32, 10
	rng := rand.New(rand.NewSource(8))
	// Overlapping Gaussian clusters: centres spread three times the
	// noise, so neighbours of a point lie across several coarse lists.
	centres := make([][]float32, 64)
	for i := range centres {
		centres[i] = make([]float32, dim)
		for j := range centres[i] {
			centres[i][j] = float32(3 * rng.NormFloat64())
		}
	}
	draw := func() []float32 {
		c := centres[rng.Intn(len(centres))]
		v := make([]float32, dim)
		for j := range v {
			v[j] = c[j] + float32(rng.NormFloat64())
		}
		return v
	}
	db, _ := openTemp(t, Options{Sync: wal.SyncNone})
	c := mustColl(t, db, "d", Config{Dim: dim, Metric: L2, Index: IndexConfig{TrainThreshold: n}})
	base := make([]float32, 0, n*dim)
	ids := make([]uint64, 0, n)
	for range n {
		v := draw()
		id, err := c.Add(AddRequest{Vector: v})
		if err != nil {
			t.Fatal(err)
		}
		base = append(base, v...)
		ids = append(ids, id)
	}
	info := waitIndexed(t, c)
	hit := 0
	for range nq {
		q := draw()
		exact := exactSearch(base, dim, L2, roaring.New(), q, SearchOptions{K1: k})
		want := map[uint64]bool{}
		for _, e := range exact {
			want[ids[e.row]] = true
		}
		opt := NewRetrieveOptions()
		opt.K2, opt.Lambda = k, 0
		res, err := c.Retrieve(q, opt)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if want[r.ID] {
				hit++
			}
		}
	}
	recall := float64(hit) / float64(nq*k)
	t.Logf("%s: recall@10 %.3f at the default nprobe", info.Index, recall)
	if recall < 0.95 {
		t.Fatalf("%s: recall@10 %.3f at the defaults, want >= 0.95", info.Index, recall)
	}
}

// TestInfoShowsRetrainAndTrainingSize: while a retrain runs over a live
// index, MEM.INFO's index and INFO's keyspace say so (a client measuring
// retrieval during a retrain must be able to tell), and the description
// names the size the index was trained on, which a restart keeps.
func TestInfoShowsRetrainAndTrainingSize(t *testing.T) {
	const n0 = 1000
	dir := t.TempDir()
	opts := Options{Sync: wal.SyncNone, CheckpointInterval: -1, Logf: t.Logf}
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Create("ix", Config{Dim: 16, Metric: L2, Index: IndexConfig{TrainThreshold: n0}}); err != nil {
		t.Fatal(err)
	}
	c, _ := db.Collection("ix")
	for _, v := range clustered(rand.New(rand.NewSource(9)), n0+10, 16) {
		if _, err := c.Add(AddRequest{Vector: v}); err != nil {
			t.Fatal(err)
		}
	}
	info := waitIndexed(t, c)
	// The build takes its snapshot when its goroutine runs, so it may
	// train on a few of the adds that followed the threshold.
	var trained int
	if i := strings.LastIndex(info.Index, " trained="); i < 0 {
		t.Fatalf("index %q: want the training size, trained=N, at the end", info.Index)
	} else if _, err := fmt.Sscanf(info.Index[i:], " trained=%d", &trained); err != nil || trained < n0 || trained > n0+10 {
		t.Fatalf("index %q: want trained=N with %d <= N <= %d", info.Index, n0, n0+10)
	}
	wantTrained := fmt.Sprintf(" trained=%d", trained)
	if st := db.CollectionStats(); st[0].Index != "ivfpq" {
		t.Fatalf("keyspace index %q, want ivfpq", st[0].Index)
	}
	// A retrain in progress, as maybeBuildLocked marks one.
	c.mu.Lock()
	c.building = true
	c.mu.Unlock()
	info, _ = c.Info()
	if !strings.HasPrefix(info.Index, "ivfpq nlist=") || !strings.HasSuffix(info.Index, " (retraining)") {
		t.Fatalf("index during a retrain %q, want the live index and (retraining)", info.Index)
	}
	if st := db.CollectionStats(); st[0].Index != "ivfpq+building" {
		t.Fatalf("keyspace index during a retrain %q, want ivfpq+building", st[0].Index)
	}
	c.mu.Lock()
	c.building = false
	c.mu.Unlock()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db, err = Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, _ = db.Collection("ix")
	if info, _ := c.Info(); !strings.HasSuffix(info.Index, wantTrained) {
		t.Fatalf("after reopen: index %q, want%s kept", info.Index, wantTrained)
	}
}

// TestRetrainDueWhenBuildEndsStartsAtOnce: a fill that outruns a build (the
// collection grows past retrainFactor times the build's training size
// while it runs, and then stops growing) got its retrain only at the next
// add or restart: a collection filled to 1M over the protocol kept an index
// trained on 10,000 memories. The build's end now starts the retrain.
func TestRetrainDueWhenBuildEndsStartsAtOnce(t *testing.T) {
	const n0 = 1000
	db, err := Open(t.TempDir(), Options{Sync: wal.SyncNone, CheckpointInterval: -1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Create("ix", Config{Dim: 16, Metric: L2, Index: IndexConfig{TrainThreshold: n0}}); err != nil {
		t.Fatal(err)
	}
	c, _ := db.Collection("ix")
	vecs := clustered(rand.New(rand.NewSource(11)), (retrainFactor+1)*n0, 16)
	// The first build, run by the test so that the adds below land
	// while it runs: building stops the adds from starting one.
	c.mu.Lock()
	c.building = true
	c.mu.Unlock()
	for _, v := range vecs[:n0] {
		if _, err := c.Add(AddRequest{Vector: v}); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	ix, n, err := c.buildIndex()
	if err != nil || n != n0 {
		t.Fatalf("buildIndex: %d memories, %v", n, err)
	}
	for _, v := range vecs[n0:] { // the fill goes on past retrainFactor·n0 and ends
		if _, err := c.Add(AddRequest{Vector: v}); err != nil {
			t.Fatal(err)
		}
	}
	c.finishBuild(start, ix, n, err)
	c.mu.RLock()
	started := c.building
	c.mu.RUnlock()
	if !started {
		t.Fatalf("the first build ended with %d memories, trained on %d: no retrain started", len(vecs), n0)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		c.mu.RLock()
		trained, building := c.trainedOn, c.building
		c.mu.RUnlock()
		if trained == len(vecs) && !building {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("retrain not done within 60s: trained on %d of %d", trained, len(vecs))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
