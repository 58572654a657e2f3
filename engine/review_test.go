package engine

import (
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/memrl/memrl/vfs"
	"github.com/memrl/memrl/wal"
)

// An add without ID after one with the largest id must never replace an
// existing memory (nextID must not wrap around to ids in use).
func TestReviewAutoIDNeverReusesAnID(t *testing.T) {
	db, _ := openTemp(t, Options{Sync: wal.SyncNone, CheckpointInterval: -1})
	c := mustColl(t, db, "c", NewConfig(2))
	first, err := c.Add(AddRequest{Vector: []float32{1, 0}, Q: 7, HasQ: true})
	if err != nil {
		t.Fatal(err)
	}
	c.Add(AddRequest{Vector: []float32{0, 1}, ID: math.MaxUint64, HasID: true})
	c.Add(AddRequest{Vector: []float32{0, 1}, ID: math.MaxUint64 - 1, HasID: true})
	for i := 0; i < 3; i++ {
		id, err := c.Add(AddRequest{Vector: []float32{1, 1}})
		if err == nil && id == first {
			t.Fatalf("auto id %d reused the id of a live memory", id)
		}
	}
	m, err := c.Get(first)
	if err != nil || m.Q != 7 {
		t.Fatalf("memory %d was replaced: %+v, %v", first, m, err)
	}
}

// A huge REFINE must be refused, not allocate k·REFINE candidates (or
// panic when the product overflows).
func TestReviewRefineIsBounded(t *testing.T) {
	db, _ := openTemp(t, Options{FS: vfs.NewMemFS(), Sync: wal.SyncNone, CheckpointInterval: -1})
	cfg := NewConfig(8)
	cfg.Metric = L2
	cfg.Index = IndexConfig{NList: 2, PQBits: 4, TrainThreshold: 100}
	c := mustColl(t, db, "c", cfg)
	rng := rand.New(rand.NewSource(1))
	for _, v := range clustered(rng, 300, 8) {
		if _, err := c.Add(AddRequest{Vector: v}); err != nil {
			t.Fatal(err)
		}
	}
	waitIndexed(t, c)
	opt := NewRetrieveOptions()
	opt.K1 = MaxK
	opt.Refine = 1 << 50
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("Retrieve panicked: %v", p)
			}
		}()
		if _, err := c.Retrieve(make([]float32, 8), opt); err == nil {
			t.Fatal("REFINE 2^50 accepted")
		}
	}()
}

// listHookFS calls hook (once) before listing the collections folder.
type listHookFS struct {
	vfs.FS
	once sync.Once
	hook func()
}

func (f *listHookFS) List(dir string) ([]string, error) {
	if filepath.Base(dir) == "collections" && f.hook != nil {
		f.once.Do(f.hook)
	}
	return f.FS.List(dir)
}

// A collection created while a checkpoint removes orphan folders must keep
// its files.
func TestReviewCheckpointKeepsConcurrentlyCreatedCollection(t *testing.T) {
	mem := vfs.NewMemFS()
	fs := &listHookFS{FS: mem}
	dir := "/db"
	opts := Options{FS: fs, CheckpointInterval: -1, CheckpointBytes: -1, Logf: t.Logf}
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	fs.hook = func() {
		if err := db.Create("late", NewConfig(2)); err != nil {
			t.Error(err)
		}
	}
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	c, err := db.Collection("late")
	if err != nil {
		t.Fatal(err)
	}
	add(t, c, 1, 0.5, 1, 0)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(dir, Options{FS: mem, CheckpointInterval: -1, CheckpointBytes: -1, Logf: t.Logf})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer db.Close()
	c, err = db.Collection("late")
	if err != nil {
		t.Fatal(err)
	}
	if m, err := c.Get(1); err != nil || m.Q != 0.5 {
		t.Fatalf("memory lost: %+v %v", m, err)
	}
}

// Concurrent Close calls must not panic.
func TestReviewConcurrentClose(t *testing.T) {
	db, err := Open(t.TempDir(), Options{FS: vfs.NewMemFS(), CheckpointInterval: -1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db.Close()
		}()
	}
	wg.Wait()
}

// An index replaced by a retrain is closed once no save of it runs, not
// kept until the collection is closed.
func TestReviewRetiredIndexIsClosed(t *testing.T) {
	db, _ := openTemp(t, Options{Sync: wal.SyncNone, CheckpointInterval: -1})
	cfg := NewConfig(8)
	cfg.Metric = L2
	cfg.Index = IndexConfig{TrainThreshold: 300}
	c := mustColl(t, db, "c", cfg)
	rng := rand.New(rand.NewSource(2))
	vecs := clustered(rng, 1400, 8)
	for _, v := range vecs[:300] {
		if _, err := c.Add(AddRequest{Vector: v}); err != nil {
			t.Fatal(err)
		}
	}
	waitIndexed(t, c)
	for _, v := range vecs[300:] {
		if _, err := c.Add(AddRequest{Vector: v}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		c.mu.Lock()
		done := !c.building && !c.saving && c.trainedOn >= 1200
		retired := len(c.retired)
		c.mu.Unlock()
		if done {
			// The save goroutine clears saving, lets go of the lock and
			// only then closes the retired indexes (closeRetired): wait
			// for that on a loaded machine, not a fixed moment.
			for closeBy := time.Now().Add(30 * time.Second); retired != 0; {
				if time.Now().After(closeBy) {
					t.Fatalf("%d retired indexes still open after the retrain", retired)
				}
				time.Sleep(time.Millisecond)
				c.mu.Lock()
				retired = len(c.retired)
				c.mu.Unlock()
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no retrain within 60s (retired %d)", retired)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// An index file discarded at open (it describes rows the log does not
// have) must not be trusted at a later open, once new adds have refilled
// those rows with other vectors.
func TestReviewDiscardedIndexIsNotReusedLater(t *testing.T) {
	cfg := NewConfig(8)
	cfg.Metric = L2
	cfg.Index = IndexConfig{NList: 2, TrainThreshold: 300}
	opts := Options{Sync: wal.SyncNone, CheckpointInterval: -1, Logf: t.Logf}
	rng := rand.New(rand.NewSource(4))

	// dirA: an index of 400 rows, saved.
	dirA := t.TempDir()
	db, err := Open(dirA, opts)
	if err != nil {
		t.Fatal(err)
	}
	c := mustColl(t, db, "c", cfg)
	for _, v := range clustered(rng, 400, 8) {
		if _, err := c.Add(AddRequest{Vector: v}); err != nil {
			t.Fatal(err)
		}
	}
	waitIndexed(t, c)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// dirB: the same collection (uid 1) holding 100 rows, and dirA's index
	// file: it describes 400 rows the log of dirB does not have.
	dirB := t.TempDir()
	db, err = Open(dirB, opts)
	if err != nil {
		t.Fatal(err)
	}
	c = mustColl(t, db, "c", cfg)
	for _, v := range clustered(rng, 100, 8) {
		if _, err := c.Add(AddRequest{Vector: v}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	ixA := filepath.Join(collectionDir(dirA, 1), "ivfpq")
	ixB := filepath.Join(collectionDir(dirB, 1), "ivfpq")
	if err := os.CopyFS(ixB, os.DirFS(ixA)); err != nil {
		t.Fatal(err)
	}

	// Open: the index is discarded. Rows grow past 400 while the live
	// count stays under the training threshold (no rebuild).
	db, err = Open(dirB, opts)
	if err != nil {
		t.Fatal(err)
	}
	c, _ = db.Collection("c")
	for _, v := range clustered(rng, 350, 8) {
		id, err := c.Add(AddRequest{Vector: v})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Delete([]uint64{id}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db, err = Open(dirB, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, _ = db.Collection("c")
	info, err := c.Info()
	if err != nil {
		t.Fatal(err)
	}
	if info.Count != 100 || info.Index != "flat" {
		t.Fatalf("count %d, index %q: the discarded index of other vectors is in use", info.Count, info.Index)
	}
}
