package engine

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/memrl/memrl/vfs"
)

// TestKeys: an add gives a memory a key every method can name it by; a
// key in use is refused (ErrKeyExists) and changes nothing; a delete frees
// it; keys survive restarts from the log and from checkpoints.
func TestKeys(t *testing.T) {
	fs := vfs.NewMemFS()
	db, c := openAttrsDB(t, fs, Options{})
	vec := []float32{1, 2, 3, 4}
	id, err := c.Add(AddRequest{Vector: vec, Key: "task-1", Payload: []byte("one")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Add(AddRequest{Vector: vec, Key: "task-2"}); err != nil {
		t.Fatal(err)
	}
	before, _ := c.Info()
	if _, err := c.Add(AddRequest{Vector: vec, Key: "task-1"}); !errors.Is(err, ErrKeyExists) {
		t.Fatalf("second add of a key: %v, want ErrKeyExists", err)
	}
	if _, err := c.Add(AddRequest{Vector: vec, Key: strings.Repeat("k", MaxKeyLen+1)}); !errors.Is(err, ErrBadKey) {
		t.Fatalf("key of %d bytes: %v, want ErrBadKey", MaxKeyLen+1, err)
	}
	if after, _ := c.Info(); !reflect.DeepEqual(after, before) {
		t.Fatalf("refused adds changed the collection: %+v, then %+v", before, after)
	}
	if _, err := c.Add(AddRequest{Vector: vec, Key: strings.Repeat("k", MaxKeyLen)}); err != nil {
		t.Fatalf("key of %d bytes: %v", MaxKeyLen, err)
	}
	if mi := mustGet(t, c, ByKey("task-1")); mi.ID != id || mi.Key != "task-1" || string(mi.Payload) != "one" {
		t.Fatalf("Get by key: %+v", mi)
	}
	if _, err := c.GetRef(ByKey("nope")); !errors.Is(err, ErrNoMemory) {
		t.Fatalf("unknown key: %v", err)
	}
	qs, ticket, err := c.RewardRefsDeferred(1, []Ref{ByKey("task-1"), ByID(id)}, nil)
	if err != nil || len(qs) != 2 || qs[0] != qs[1] || db.WaitDurable(ticket) != nil {
		t.Fatalf("reward by key and id of one memory: %v %v", qs, err)
	}
	if _, _, err := c.RewardRefsDeferred(1, []Ref{ByKey("task-2"), ByKey("nope")}, nil); !errors.Is(err, ErrNoMemory) {
		t.Fatalf("reward naming an unknown key: %v", err)
	}
	if mi := mustGet(t, c, ByKey("task-2")); mi.Visits != 0 {
		t.Fatalf("a refused reward changed task-2: %+v", mi)
	}

	check := func(what string, c *Collection) {
		t.Helper()
		if mi, err := c.GetRef(ByKey("task-1")); err != nil || mi.ID != id || mi.Visits != 1 {
			t.Fatalf("%s: task-1: %+v %v", what, mi, err)
		}
		if _, err := c.GetRef(ByKey("task-2")); err != nil {
			t.Fatalf("%s: task-2: %v", what, err)
		}
		if _, err := c.Add(AddRequest{Vector: vec, Key: "task-2"}); !errors.Is(err, ErrKeyExists) {
			t.Fatalf("%s: add of a key in use: %v", what, err)
		}
	}
	fs, db = crashOpen(t, fs, 1)
	c, _ = db.Collection("c")
	check("replayed", c)
	if err := db.CheckpointFull(); err != nil {
		t.Fatal(err)
	}
	fs, db = crashOpen(t, fs, 2)
	c, _ = db.Collection("c")
	check("checkpointed", c)

	// A delete frees the key, also by key; unknown keys are not counted.
	n, ticket, err := c.DeleteRefsDeferred([]Ref{ByKey("task-2"), ByKey("nope"), ByKey("task-2")})
	if err != nil || n != 1 || db.WaitDurable(ticket) != nil {
		t.Fatalf("delete by key: %d %v", n, err)
	}
	id3, err := c.Add(AddRequest{Vector: vec, Key: "task-2", Payload: []byte("again")})
	if err != nil {
		t.Fatalf("re-add of a deleted key: %v", err)
	}
	if err := db.Checkpoint(); err != nil { // a delta: the tombstone and the re-add
		t.Fatal(err)
	}
	fs, db = crashOpen(t, fs, 3)
	c, _ = db.Collection("c")
	if mi := mustGet(t, c, ByKey("task-2")); mi.ID != id3 || string(mi.Payload) != "again" {
		t.Fatalf("after delta: task-2 is %+v", mi)
	}
	db.Close()
}

// TestKeyCollision forces two keys onto one fingerprint: the second is
// refused with ErrKeyCollision, never merged with the first, and a lookup
// of it never finds the first.
func TestKeyCollision(t *testing.T) {
	old := keyFingerprint
	keyFingerprint = func([]byte) uint64 { return 42 }
	defer func() { keyFingerprint = old }()
	fs := vfs.NewMemFS()
	db, c := openAttrsDB(t, fs, Options{})
	vec := []float32{1, 2, 3, 4}
	a, err := c.Add(AddRequest{Vector: vec, Key: "alpha"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Add(AddRequest{Vector: vec, Key: "beta"}); !errors.Is(err, ErrKeyCollision) {
		t.Fatalf("colliding key: %v, want ErrKeyCollision", err)
	}
	for _, err := range []error{
		func() error { _, err := c.GetRef(ByKey("beta")); return err }(),
		c.SetAttrs(ByKey("beta"), []byte(`{}`)),
		func() error { _, _, err := c.RewardRefsDeferred(1, []Ref{ByKey("beta")}, nil); return err }(),
	} {
		if !errors.Is(err, ErrNoMemory) {
			t.Fatalf("a colliding key named memory %d: %v", a, err)
		}
	}
	if n, _, err := c.DeleteRefsDeferred([]Ref{ByKey("beta")}); n != 0 || err != nil {
		t.Fatalf("delete of the colliding key: %d %v", n, err)
	}
	if in, _ := c.Info(); in.Count != 1 {
		t.Fatalf("count %d", in.Count)
	}
	// Once alpha is gone, beta may have the fingerprint; after a restart
	// the index still tells them apart.
	if _, _, err := c.DeleteRefsDeferred([]Ref{ByKey("alpha")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Add(AddRequest{Vector: vec, Key: "beta"}); err != nil {
		t.Fatal(err)
	}
	_, db = crashOpen(t, fs, 1)
	c, _ = db.Collection("c")
	if _, err := c.GetRef(ByKey("alpha")); !errors.Is(err, ErrNoMemory) {
		t.Fatalf("alpha after restart: %v", err)
	}
	if _, err := c.Add(AddRequest{Vector: vec, Key: "alpha"}); !errors.Is(err, ErrKeyCollision) {
		t.Fatalf("alpha against beta after restart: %v", err)
	}
	db.Close()
}

// TestClaimLockedBatch: claimLocked, which a batch add uses, refuses a key
// named twice in the batch and two keys of one fingerprint in it, and
// collects the expired holders of ids and keys once each.
func TestClaimLockedBatch(t *testing.T) {
	clk := newFakeClock()
	db, c := openAttrsDB(t, vfs.NewMemFS(), Options{Now: clk.Now, SweepInterval: -1})
	defer db.Close()
	vec := []float32{1, 2, 3, 4}
	if _, err := c.Add(AddRequest{Vector: vec, ID: 1, HasID: true, Key: "old", TTL: time.Second}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Add(AddRequest{Vector: vec, ID: 2, HasID: true, Key: "live"}); err != nil {
		t.Fatal(err)
	}
	clk.advance(time.Second)
	now := clk.Now().UnixNano()
	claim := func(reqs []AddRequest, ids []uint64) ([]uint64, int, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.claimLocked(reqs, ids, now)
	}
	purge, bad, err := claim([]AddRequest{{Key: "old"}, {}, {Key: "new"}}, []uint64{10, 1, 11})
	if err != nil || bad != -1 || len(purge) != 1 || purge[0] != 1 {
		t.Fatalf("expired id 1 holding key old, claimed twice: purge %v, %d, %v", purge, bad, err)
	}
	if _, bad, err := claim([]AddRequest{{Key: "a"}, {Key: "b"}, {Key: "a"}}, []uint64{10, 11, 12}); !errors.Is(err, ErrKeyExists) || bad != 2 {
		t.Fatalf("a key twice in a batch: %d, %v", bad, err)
	}
	if _, bad, err := claim([]AddRequest{{}, {Key: "live"}}, []uint64{10, 11}); !errors.Is(err, ErrKeyExists) || bad != 1 {
		t.Fatalf("a live key: %d, %v", bad, err)
	}
	if _, bad, err := claim([]AddRequest{{}, {}}, []uint64{10, 2}); !errors.Is(err, ErrIDExists) || bad != 1 {
		t.Fatalf("a live id: %d, %v", bad, err)
	}
	old := keyFingerprint
	keyFingerprint = func([]byte) uint64 { return 7 }
	defer func() { keyFingerprint = old }()
	if _, bad, err := claim([]AddRequest{{Key: "x"}, {Key: "y"}}, []uint64{10, 11}); !errors.Is(err, ErrKeyCollision) || bad != 1 {
		t.Fatalf("two keys of one fingerprint in a batch: %d, %v", bad, err)
	}
}

// TestInfoCountsKeysAndExpiring: Info reports how many memories have a key
// and an expiry.
func TestInfoCountsKeysAndExpiring(t *testing.T) {
	db, c := openAttrsDB(t, vfs.NewMemFS(), Options{SweepInterval: -1})
	defer db.Close()
	for i, req := range []AddRequest{{Key: "a"}, {Key: "b", TTL: time.Hour}, {TTL: time.Hour}, {}} {
		req.Vector = []float32{1, 2, 3, float32(i)}
		if _, err := c.Add(req); err != nil {
			t.Fatal(err)
		}
	}
	if in, _ := c.Info(); in.Keys != 2 || in.Expiring != 2 || in.Count != 4 {
		t.Fatalf("Info: %+v", in)
	}
}
