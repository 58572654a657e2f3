package engine

import (
	"errors"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/memrl/memrl/vfs"
	"github.com/memrl/memrl/wal"
)

// TestFailedFsyncStopsWrites injects one failed fsync of the log: the
// writes waiting on it fail with wal.ErrFailed, every later write fails the
// same way without touching the disk, reads keep working, and a crash
// afterwards loses nothing that was acknowledged.
func TestFailedFsyncStopsWrites(t *testing.T) {
	fs := vfs.NewMemFS()
	db := openMem(t, fs)
	defer db.Close()
	c := mustColl(t, db, "k", crashCfg)
	for id := uint64(1); id <= 2; id++ {
		if _, err := c.Add(AddRequest{Vector: []float32{1, 2, 3, float32(id)}, ID: id, HasID: true}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Reward(1, []uint64{1}, nil); err != nil {
		t.Fatal(err)
	}
	fs.FailNextSync("wal")
	if _, err := c.Reward(1, []uint64{2}, nil); !errors.Is(err, wal.ErrFailed) {
		t.Fatalf("reward during the failed fsync: %v, want wal.ErrFailed", err)
	}
	if err := db.Err(); !errors.Is(err, wal.ErrFailed) {
		t.Fatalf("db.Err() = %v", err)
	}
	ops := fs.MutatingOps()
	writes := map[string]func() error{
		"reward": func() error { _, err := c.Reward(1, []uint64{1}, nil); return err },
		"add": func() error {
			_, err := c.Add(AddRequest{Vector: []float32{1, 1, 1, 1}, ID: 9, HasID: true})
			return err
		},
		"delete":     func() error { _, err := c.Delete([]uint64{1}); return err },
		"create":     func() error { return db.Create("other", crashCfg) },
		"drop":       func() error { return db.Drop("k") },
		"checkpoint": func() error { return db.Checkpoint() },
	}
	for name, w := range writes {
		if err := w(); !errors.Is(err, wal.ErrFailed) {
			t.Errorf("%s after the failure: %v, want wal.ErrFailed", name, err)
		}
	}
	// Reads are served from memory and go on.
	if m, err := c.Get(1); err != nil || m.Visits != 1 {
		t.Errorf("Get after the failure: %+v %v", m, err)
	}
	if _, err := c.Retrieve([]float32{1, 2, 3, 1}, NewRetrieveOptions()); err != nil {
		t.Errorf("Retrieve after the failure: %v", err)
	}
	if names := db.List(); len(names) != 1 {
		t.Errorf("List after the failure: %v", names)
	}
	// The refused writes touched no file except what they write before
	// logging (an add's vector and payload rows, derived data past the
	// checkpointed sizes, and a create's folder).
	t.Logf("%d file operations after the failure", fs.MutatingOps()-ops)

	_, db2 := crashOpen(t, fs, 1)
	defer db2.Close()
	c2, _ := db2.Collection("k")
	if m, err := c2.Get(1); err != nil || m.Visits != 1 {
		t.Fatalf("acknowledged reward after the crash: %+v %v", m, err)
	}
	if _, err := c2.Get(9); !errors.Is(err, ErrNoMemory) {
		t.Fatalf("refused add after the crash: %v", err)
	}
	if _, err := db2.Collection("other"); !errors.Is(err, ErrNoCollection) {
		t.Fatalf("refused create after the crash: %v", err)
	}
}

// TestFailedFsyncUnderLoad fails one log fsync while writers reward
// concurrently: a reward that starts after the database reports the failure
// never succeeds, and after a crash every acknowledged reward is there.
func TestFailedFsyncUnderLoad(t *testing.T) {
	fs := vfs.NewMemFS()
	db := openMem(t, fs)
	c := mustColl(t, db, "k", crashCfg)
	const writers = 8
	for id := uint64(1); id <= writers; id++ {
		if _, err := c.Add(AddRequest{Vector: []float32{1, 2, 3, float32(id)}, ID: id, HasID: true}); err != nil {
			t.Fatal(err)
		}
	}
	acked := make([]uint64, writers+1)
	var total atomic.Int64
	var wg sync.WaitGroup
	for w := 1; w <= writers; w++ {
		wg.Add(1)
		go func(id uint64) {
			defer wg.Done()
			for {
				failedBefore := db.Err() != nil
				_, err := c.Reward(1, []uint64{id}, nil)
				if err == nil && failedBefore {
					t.Errorf("a reward started after the failure was acknowledged")
				}
				if err != nil {
					if !errors.Is(err, wal.ErrFailed) {
						t.Errorf("reward: %v", err)
					}
					return
				}
				acked[id]++
				if total.Add(1) == 200 {
					fs.FailNextSync("wal")
				}
			}
		}(uint64(w))
	}
	wg.Wait()
	db.Close()
	db2, err := Open("/db", crashOpts(fs.Crash(vfs.KeepRandomPrefix, rand.New(rand.NewSource(2)))))
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	c2, _ := db2.Collection("k")
	for id := uint64(1); id <= writers; id++ {
		m, err := c2.Get(id)
		if err != nil || m.Visits < acked[id] || m.Visits > acked[id]+1 {
			t.Errorf("memory %d: %d visits after the crash, %d acknowledged (%v)", id, m.Visits, acked[id], err)
		}
	}
}

// TestFailedFileSyncStopsCheckpoints fails the fsync of each file a
// checkpoint depends on (vectors, payloads, the checkpoint file itself):
// that checkpoint and every later one fail with ErrCheckpointsStopped
// without touching a file (the failed fsync is never retried), writes go
// on, and after a crash every acknowledged write is there, recovered from
// the log that no checkpoint was allowed to truncate.
func TestFailedFileSyncStopsCheckpoints(t *testing.T) {
	for _, file := range []string{"vectors.f32", "payloads.dat", "CHECKPOINT"} {
		t.Run(file, func(t *testing.T) {
			fs := vfs.NewMemFS()
			db := openMem(t, fs)
			defer db.Close()
			c := mustColl(t, db, "k", crashCfg)
			add := func(id uint64) {
				t.Helper()
				if _, err := c.Add(AddRequest{Vector: []float32{1, 2, 3, float32(id)}, Payload: []byte("p"), ID: id, HasID: true}); err != nil {
					t.Fatal(err)
				}
			}
			add(1)
			if err := db.Checkpoint(); err != nil {
				t.Fatal(err)
			}
			add(2)
			fs.FailNextSync(file)
			if err := db.Checkpoint(); !errors.Is(err, ErrCheckpointsStopped) || !errors.Is(err, vfs.ErrInjected) {
				t.Fatalf("checkpoint with a failed sync of %s: %v", file, err)
			}
			add(3)
			if _, err := c.Reward(1, []uint64{2}, nil); err != nil {
				t.Fatalf("reward after the failed checkpoint: %v", err)
			}
			if st := db.CheckpointStatus(); !errors.Is(st.Stopped, ErrCheckpointsStopped) || st.Failures != 1 || !st.LastFull {
				t.Fatalf("status after the failure: %+v", st)
			}
			ops := fs.MutatingOps()
			if err := db.Checkpoint(); !errors.Is(err, ErrCheckpointsStopped) {
				t.Fatalf("second checkpoint: %v, want ErrCheckpointsStopped", err)
			}
			if n := fs.MutatingOps() - ops; n != 0 {
				t.Fatalf("a stopped checkpoint did %d file operations", n)
			}

			_, db2 := crashOpen(t, fs, 1)
			defer db2.Close()
			c2, _ := db2.Collection("k")
			for id := uint64(1); id <= 3; id++ {
				m, err := c2.Get(id)
				if err != nil || string(m.Payload) != "p" || m.Vector[3] != float32(id) {
					t.Fatalf("memory %d after the crash: %+v %v", id, m, err)
				}
			}
			if m, _ := c2.Get(2); m.Visits != 1 {
				t.Fatalf("reward after the failed checkpoint lost: %+v", m)
			}
			if err := db2.Checkpoint(); err != nil {
				t.Fatalf("checkpoint after a restart: %v", err)
			}
		})
	}
}
