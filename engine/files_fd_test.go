package engine

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/memrl/memrl/vfs"
)

// fdChildEnv, when set, makes TestManyCollectionsUnderLowFDLimit run its
// body (in a child process whose descriptor limit it may lower).
const fdChildEnv = "MEMRL_FD_CHILD_DIR"

// TestManyCollectionsUnderLowFDLimit creates more collections than the
// process may hold descriptors, under a lowered RLIMIT_NOFILE (in a child
// process, so that the limit binds nothing else): every create, add,
// checkpoint and log write succeeds, and after a restart under the same
// limit every collection opens and reads back. Collections used to hold
// two descriptors each for good, so this ran out of descriptors and wedged
// the log.
func TestManyCollectionsUnderLowFDLimit(t *testing.T) {
	if dir := os.Getenv(fdChildEnv); dir != "" {
		manyCollectionsChild(t, dir)
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestManyCollectionsUnderLowFDLimit$", "-test.count=1")
	cmd.Env = append(os.Environ(), fdChildEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

// fdLimit is the child's RLIMIT_NOFILE: well below the collections' needs
// (two or three files each), above the engine's default cap of open files.
const fdLimit = 400

func manyCollectionsChild(t *testing.T, dir string) {
	lim := syscall.Rlimit{Cur: fdLimit, Max: fdLimit}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	const n = 600
	opts := Options{SegmentSize: 1 << 16, CheckpointInterval: -1, CheckpointBytes: -1, Logf: t.Logf}
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("c%d", i)
		cfg := NewConfig(2)
		cfg.Metric = L2 // vectors stored as given
		if err := db.Create(name, cfg); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		c, err := db.Collection(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Add(AddRequest{Vector: []float32{1, float32(i)}, Payload: []byte(name), ID: 1, HasID: true}); err != nil {
			t.Fatalf("add to %s: %v", name, err)
		}
		if i%150 == 0 {
			if err := db.Checkpoint(); err != nil {
				t.Fatalf("checkpoint after %d collections: %v", i+1, err)
			}
		}
	}
	// The collections' files are capped; the rest is the log, the lock
	// and the test binary's own.
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil && len(fds) > DefaultMaxOpenFiles+32 {
		t.Fatalf("%d descriptors open with %d collections, cap %d", len(fds), n, DefaultMaxOpenFiles)
	}
	// Writes to an early collection, whose files the cap has closed, work.
	c0, _ := db.Collection("c0")
	if _, err := c0.Add(AddRequest{Vector: []float32{1, 1}, Payload: []byte("again"), ID: 2, HasID: true}); err != nil {
		t.Fatalf("add to c0: %v", err)
	}
	if err := db.Err(); err != nil {
		t.Fatalf("log: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(dir, opts)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer db.Close()
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("c%d", i)
		c, err := db.Collection(name)
		if err != nil {
			t.Fatal(err)
		}
		m, err := c.Get(1)
		if err != nil || string(m.Payload) != name || m.Vector[1] != float32(i) {
			t.Fatalf("%s: get = %+v, %v", name, m, err)
		}
	}
}

// emfileFS fails opens of collection files with EMFILE while fail is set,
// as an exhausted descriptor table would.
type emfileFS struct {
	vfs.FS
	fail    atomic.Bool
	failDir atomic.Bool // fail SyncDir of collection folders instead
}

func (f *emfileFS) SyncDir(name string) error {
	if f.failDir.Load() && strings.Contains(name, "/collections") {
		return &os.PathError{Op: "open", Path: name, Err: syscall.EMFILE}
	}
	return f.FS.SyncDir(name)
}

func (f *emfileFS) OpenReadWrite(name string) (vfs.File, error) {
	if f.fail.Load() && strings.Contains(name, "/collections/") {
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EMFILE}
	}
	return f.FS.OpenReadWrite(name)
}

// TestOutOfDescriptorsIsAClearErrorNotAPoisonedLog: when a collection file
// cannot be opened for want of descriptors, the command that needed it
// fails with ErrTooManyOpenFiles and changes nothing, while the log, the
// collections whose files are open, and (once descriptors are free) every
// command and checkpoint go on without a restart.
func TestOutOfDescriptorsIsAClearErrorNotAPoisonedLog(t *testing.T) {
	mem := vfs.NewMemFS()
	fs := &emfileFS{FS: mem}
	opts := crashOpts(mem)
	opts.FS, opts.MaxOpenFiles = fs, 2 // one collection's files at a time
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	a := mustColl(t, db, "a", NewConfig(2))
	b := mustColl(t, db, "b", NewConfig(2))
	if _, err := a.Add(AddRequest{Vector: []float32{1, 0}, Payload: []byte("pa")}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Add(AddRequest{Vector: []float32{0, 1}, Payload: []byte("pb")}); err != nil {
		t.Fatal(err)
	}
	if n := db.files.openCount(); n > 2 {
		t.Fatalf("%d files open, cap 2", n)
	}

	fs.fail.Store(true)
	if err := db.Create("c", NewConfig(2)); !errors.Is(err, ErrTooManyOpenFiles) {
		t.Fatalf("create: %v, want ErrTooManyOpenFiles", err)
	}
	fs.fail.Store(false)
	fs.failDir.Store(true)
	if err := db.Create("c", NewConfig(2)); !errors.Is(err, ErrTooManyOpenFiles) {
		t.Fatalf("create, syncing the folder: %v, want ErrTooManyOpenFiles", err)
	}
	fs.failDir.Store(false)
	fs.fail.Store(true)
	if got := db.List(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("collections %v after a failed create", got)
	}
	if _, err := a.Add(AddRequest{Vector: []float32{1, 1}, Payload: []byte("x")}); !errors.Is(err, ErrTooManyOpenFiles) {
		t.Fatalf("add to a: %v, want ErrTooManyOpenFiles", err)
	}
	if _, err := a.Get(1); !errors.Is(err, ErrTooManyOpenFiles) {
		t.Fatalf("get from a: %v, want ErrTooManyOpenFiles", err)
	}
	if err := db.Checkpoint(); !errors.Is(err, ErrTooManyOpenFiles) {
		t.Fatalf("checkpoint: %v, want ErrTooManyOpenFiles", err)
	}
	// The failures closed every idle file to retry (a real EMFILE would
	// then have succeeded); writes that need no collection file, such as
	// rewards, go on, and the log is not poisoned.
	if _, err := b.Reward(1, []uint64{1}, nil); err != nil {
		t.Fatalf("reward b: %v", err)
	}
	if err := db.Err(); err != nil {
		t.Fatalf("log poisoned: %v", err)
	}

	fs.fail.Store(false)
	if info, _ := a.Info(); info.Count != 1 {
		t.Fatalf("a holds %d memories after a failed add, want 1", info.Count)
	}
	if _, err := a.Add(AddRequest{Vector: []float32{1, 1}, Payload: []byte("pa2")}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Add(AddRequest{Vector: []float32{0, 1}, Payload: []byte("pb2")}); err != nil {
		t.Fatal(err)
	}
	if m, err := a.Get(1); err != nil || string(m.Payload) != "pa" {
		t.Fatalf("get a 1 = %q, %v", m.Payload, err)
	}
	mustColl(t, db, "c", NewConfig(2))
	if err := db.Checkpoint(); err != nil {
		t.Fatalf("checkpoint once descriptors are free: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openMem(t, mem)
	defer db.Close()
	if m, _ := db.colls["b"].Get(1); m.Visits != 1 {
		t.Fatalf("b 1 has %d visits after the reward, want 1", m.Visits)
	}
	for name, want := range map[string][]string{"a": {"pa", "pa2"}, "b": {"pb", "pb2"}, "c": nil} {
		c, err := db.Collection(name)
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range want {
			if m, err := c.Get(uint64(i + 1)); err != nil || string(m.Payload) != p {
				t.Fatalf("%s %d = %q, %v; want %q", name, i+1, m.Payload, err, p)
			}
		}
	}
}

// TestCollectionCap: Create refuses collections past MaxCollections with
// ErrTooManyCollections; a drop makes room; a restart with a lower cap
// still opens every collection.
func TestCollectionCap(t *testing.T) {
	mem := vfs.NewMemFS()
	opts := crashOpts(mem)
	opts.MaxCollections = 3
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b", "c"} {
		mustColl(t, db, n, NewConfig(2))
	}
	if err := db.Create("d", NewConfig(2)); !errors.Is(err, ErrTooManyCollections) {
		t.Fatalf("create past the cap: %v", err)
	}
	if err := db.Drop("a"); err != nil {
		t.Fatal(err)
	}
	mustColl(t, db, "d", NewConfig(2))
	db.Close()
	opts.MaxCollections = 1
	db, err = Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got := db.List(); !slices.Equal(got, []string{"b", "c", "d"}) {
		t.Fatalf("collections after reopen: %v", got)
	}
}
