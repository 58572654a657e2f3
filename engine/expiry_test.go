package engine

import (
	"errors"
	"math/rand"
	"sync"
	"testing"
	"time"

	"github.com/memrl/memrl/vfs"
)

// fakeClock is an Options.Now that moves only when told.
type fakeClock struct {
	mu sync.Mutex // guards t
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Unix(1_800_000_000, 0)} }

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

func (f *fakeClock) advance(d time.Duration) {
	f.mu.Lock()
	f.t = f.t.Add(d)
	f.mu.Unlock()
}

// TestExpiry: a memory added with a TTL is returned until it expires and
// never after (Get, key lookups, Retrieve, Reward), is deleted by a sweep
// (logged, so it stays deleted after a restart), and its id and key can
// be reused at once.
func TestExpiry(t *testing.T) {
	clk := newFakeClock()
	fs := vfs.NewMemFS()
	opts := Options{Now: clk.Now, SweepInterval: -1}
	db, c := openAttrsDB(t, fs, opts)
	vec := []float32{1, 2, 3, 4}
	short, err := c.Add(AddRequest{Vector: vec, Key: "short", TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	long, err := c.Add(AddRequest{Vector: vec, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Add(AddRequest{Vector: vec, TTL: -time.Second}); !errors.Is(err, ErrBadParam) {
		t.Fatalf("negative TTL: %v", err)
	}
	if mi := mustGet(t, c, ByKey("short")); !mi.Expires.Equal(clk.Now().Add(10 * time.Second)) {
		t.Fatalf("expires %v", mi.Expires)
	}
	if d, ok, err := c.TTL(ByID(short)); err != nil || !ok || d != 10*time.Second {
		t.Fatalf("TTL: %v %v %v", d, ok, err)
	}
	clk.advance(10 * time.Second)
	if _, err := c.Get(short); !errors.Is(err, ErrNoMemory) {
		t.Fatalf("Get of an expired memory: %v", err)
	}
	if _, err := c.GetRef(ByKey("short")); !errors.Is(err, ErrNoMemory) {
		t.Fatalf("Get by key of an expired memory: %v", err)
	}
	if _, err := c.Reward(1, []uint64{short}, nil); !errors.Is(err, ErrNoMemory) {
		t.Fatalf("Reward of an expired memory: %v", err)
	}
	res, err := c.Retrieve(vec, NewRetrieveOptions())
	if err != nil || len(res) != 1 || res[0].ID != long {
		t.Fatalf("Retrieve returned %+v, %v; want only memory %d", res, err, long)
	}

	// From the log: the expiry is absolute, so the replayed memory is
	// just as expired.
	fs, db = crashOpen2(t, fs, opts, 1)
	c, _ = db.Collection("c")
	if _, err := c.Get(short); !errors.Is(err, ErrNoMemory) {
		t.Fatalf("after replay: %v", err)
	}
	if n, err := db.SweepExpired(); err != nil || n != 1 {
		t.Fatalf("sweep deleted %d, %v; want 1", n, err)
	}
	if in, _ := c.Info(); in.Count != 1 {
		t.Fatalf("count after the sweep: %d", in.Count)
	}
	fs, db = crashOpen2(t, fs, opts, 2)
	c, _ = db.Collection("c")
	if in, _ := c.Info(); in.Count != 1 {
		t.Fatalf("count after the sweep and a restart: %d", in.Count)
	}

	// An expired memory's id and key are free before any sweep.
	if _, err := c.Add(AddRequest{Vector: vec, ID: 100, HasID: true, Key: "k100", TTL: time.Second}); err != nil {
		t.Fatal(err)
	}
	clk.advance(time.Second)
	if _, err := c.Add(AddRequest{Vector: vec, ID: 100, HasID: true, Payload: []byte("new")}); err != nil {
		t.Fatalf("re-add of an expired id: %v", err)
	}
	if _, err := c.Add(AddRequest{Vector: vec, Key: "k100"}); err != nil {
		t.Fatalf("add of an expired key: %v", err)
	}
	_, db = crashOpen2(t, fs, opts, 3)
	c, _ = db.Collection("c")
	if mi := mustGet(t, c, ByID(100)); string(mi.Payload) != "new" || mi.Key != "" || !mi.Expires.IsZero() {
		t.Fatalf("memory 100 after restart: %+v", mi)
	}
	if _, err := c.GetRef(ByKey("k100")); err != nil {
		t.Fatal(err)
	}
	db.Close()
}

// crashOpen2 is crashOpen with opts' clock and sweep interval.
func crashOpen2(t *testing.T, fs *vfs.MemFS, opts Options, seed int64) (*vfs.MemFS, *DB) {
	t.Helper()
	crashed := fs.Crash(vfs.DropUnsynced, rand.New(rand.NewSource(seed)))
	o := crashOpts(crashed)
	o.Now, o.SweepInterval = opts.Now, opts.SweepInterval
	db, err := Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	return crashed, db
}

// TestExpireAndPersist: MEM.EXPIRE's engine side sets, replaces and (with
// a TTL of zero or less) deletes; Persist removes an expiry; each is
// logged and checkpointed.
func TestExpireAndPersist(t *testing.T) {
	clk := newFakeClock()
	fs := vfs.NewMemFS()
	opts := Options{Now: clk.Now, SweepInterval: -1}
	db, c := openAttrsDB(t, fs, opts)
	vec := []float32{1, 2, 3, 4}
	for id := uint64(1); id <= 3; id++ {
		if _, err := c.Add(AddRequest{Vector: vec, ID: id, HasID: true}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.CheckpointFull(); err != nil {
		t.Fatal(err)
	}
	wait := func(tk Ticket, err error) {
		t.Helper()
		if err == nil {
			err = db.WaitDurable(tk)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	wait(c.ExpireDeferred(ByID(1), time.Minute))
	wait(c.ExpireDeferred(ByID(2), time.Minute))
	had, tk, err := c.PersistDeferred(ByID(2))
	wait(tk, err)
	if !had {
		t.Fatal("Persist of a memory with an expiry reported none")
	}
	if had, _, err := c.PersistDeferred(ByID(3)); had || err != nil {
		t.Fatalf("Persist of a memory without expiry: %v %v", had, err)
	}
	wait(c.ExpireDeferred(ByID(3), 0)) // deletes, as EXPIRE 0 does in Redis
	if _, err := c.Get(3); !errors.Is(err, ErrNoMemory) {
		t.Fatalf("EXPIRE 0 left the memory: %v", err)
	}
	if _, err := c.ExpireDeferred(ByID(3), time.Minute); !errors.Is(err, ErrNoMemory) {
		t.Fatalf("expire of an unknown memory: %v", err)
	}
	if _, err := c.ExpireDeferred(ByID(1), MaxTTL+1); !errors.Is(err, ErrBadParam) {
		t.Fatalf("TTL over MaxTTL: %v", err)
	}
	if err := db.Checkpoint(); err != nil { // a delta with 1 and 2 and the tombstone of 3
		t.Fatal(err)
	}
	fs, db = crashOpen2(t, fs, opts, 1)
	c, _ = db.Collection("c")
	if db.Recovery.RecordsReplayed != 0 || db.Recovery.DeltasApplied != 1 {
		t.Fatalf("recovery %+v", db.Recovery)
	}
	if mi := mustGet(t, c, ByID(1)); !mi.Expires.Equal(clk.Now().Add(time.Minute)) {
		t.Fatalf("memory 1 expires %v", mi.Expires)
	}
	if mi := mustGet(t, c, ByID(2)); !mi.Expires.IsZero() {
		t.Fatalf("memory 2 expires %v after Persist", mi.Expires)
	}
	clk.advance(time.Minute)
	if _, err := c.Get(1); !errors.Is(err, ErrNoMemory) {
		t.Fatalf("memory 1 after its minute: %v", err)
	}
	db.Close()
}

// TestSweeperDeletesInBackground: the sweeper goroutine deletes expired
// memories on its own.
func TestSweeperDeletesInBackground(t *testing.T) {
	clk := newFakeClock()
	db, c := openAttrsDB(t, vfs.NewMemFS(), Options{Now: clk.Now, SweepInterval: time.Millisecond})
	defer db.Close()
	for i := 0; i < 10; i++ {
		if _, err := c.Add(AddRequest{Vector: []float32{1, 2, 3, 4}, TTL: time.Duration(i+1) * time.Second}); err != nil {
			t.Fatal(err)
		}
	}
	clk.advance(5 * time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for {
		in, _ := c.Info()
		if in.Count == 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("count %d, want 5 once the sweeper ran", in.Count)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestSweepManyExpired: one round of the sweeper deletes every expired
// memory, however many batches that takes, and leaves the others.
func TestSweepManyExpired(t *testing.T) {
	clk := newFakeClock()
	db, c := openAttrsDB(t, vfs.NewMemFS(), Options{Now: clk.Now, SweepInterval: -1})
	defer db.Close()
	n := 2*sweepBatch + 100
	for i := 0; i < n+10; i++ {
		ttl := time.Second
		if i >= n {
			ttl = time.Hour
		}
		if _, t2, err := c.AddDeferred(AddRequest{Vector: []float32{1, 2, 3, float32(i)}, TTL: ttl}); err != nil {
			t.Fatal(err)
		} else if i == n+9 {
			if err := db.WaitDurable(t2); err != nil {
				t.Fatal(err)
			}
		}
	}
	clk.advance(time.Minute)
	start := time.Now()
	if got, err := db.SweepExpired(); err != nil || got != n {
		t.Fatalf("sweep deleted %d, %v; want %d", got, err, n)
	}
	t.Logf("swept %d expired memories in %v", n, time.Since(start))
	if in, _ := c.Info(); in.Count != 10 {
		t.Fatalf("count %d after the sweep, want 10", in.Count)
	}
}
