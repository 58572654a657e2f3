package client_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/memrl/memrl/client"
)

var ctx = context.Background()

func ptr[T any](v T) *T { return &v }

// unit returns the 2-d unit vector at cosine s to (1, 0).
func unit(s float64) []float32 {
	return []float32{float32(s), float32(math.Sqrt(1 - s*s))}
}

// wantIs fails unless err is an *Error from the server matching kind.
func wantIs(t *testing.T, what string, err, kind error) {
	t.Helper()
	var e *client.Error
	if !errors.Is(err, kind) || !errors.As(err, &e) {
		t.Fatalf("%s: error %v (%T), want a *client.Error matching %v", what, err, err, kind)
	}
}

func TestNew(t *testing.T) {
	if _, err := client.New(client.Options{}); !errors.Is(err, client.ErrNoAddress) {
		t.Fatalf("New without Addr or Redis: %v", err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: testAddr})
	defer rdb.Close()
	c, err := client.New(client.Options{Redis: rdb})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if c.Redis() != redis.UniversalClient(rdb) {
		t.Fatal("Redis() is not the client given")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	// The caller's client stays open.
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("Close closed the caller's client: %v", err)
	}
	own := newClient(t, "")
	if err := own.Close(); err != nil {
		t.Fatal(err)
	}
	if err := own.Ping(ctx); !errors.Is(err, redis.ErrClosed) {
		t.Fatalf("Ping after Close: %v, want redis.ErrClosed", err)
	}
}

func TestCollections(t *testing.T) {
	c := newClient(t, "")
	name := newColl(t, c, 4, &client.CreateOptions{
		Metric: client.L2, Alpha: ptr(0.5), Gamma: 0.25, QInit: 0.1, Index: client.Flat,
	})
	names, err := c.List(ctx)
	if err != nil || !slices.Contains(names, name) || !slices.IsSorted(names) {
		t.Fatalf("List = %v, %v; want sorted names holding %q", names, err, name)
	}
	in, err := c.Info(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	// DiskBytes: the new collection's files (their headers), whatever they take.
	want := client.CollectionInfo{Name: name, Dim: 4, Metric: client.L2, Alpha: 0.5, Gamma: 0.25, QInit: 0.1, NextID: 1, Index: in.Index,
		DiskBytes: in.DiskBytes}
	if *in != want || in.Index == "" || in.DiskBytes <= 0 {
		t.Fatalf("Info = %+v, want %+v", *in, want)
	}
	// Defaults.
	def := newColl(t, c, 3, nil)
	if in, err := c.Info(ctx, def); err != nil || in.Metric != client.Cosine || in.Alpha != 0.3 || in.Gamma != 0 || in.QInit != 0 {
		t.Fatalf("Info of a default collection = %+v, %v", in, err)
	}
	// ALPHA 0 is sent (a pointer), not taken for the default.
	zero := newColl(t, c, 3, &client.CreateOptions{Alpha: ptr(0.0)})
	if in, err := c.Info(ctx, zero); err != nil || in.Alpha != 0 {
		t.Fatalf("Info with ALPHA 0 = %+v, %v", in, err)
	}

	wantIs(t, "Create again", c.Create(ctx, name, 4, nil), client.ErrCollectionExists)
	wantIs(t, "Create bad name", c.Create(ctx, "no spaces", 4, nil), client.ErrBadName)
	wantIs(t, "Create DIM 0", c.Create(ctx, "dim0", 0, nil), client.ErrBadParam)
	wantIs(t, "Create ALPHA 2", c.Create(ctx, "alpha2", 2, &client.CreateOptions{Alpha: ptr(2.0)}), client.ErrBadParam)
	wantIs(t, "Create PQBITS 5", c.Create(ctx, "pq5", 8, &client.CreateOptions{PQBits: 5}), client.ErrBadParam)
	if names2, _ := c.List(ctx); len(names2) != len(names)+2 {
		t.Fatalf("a refused Create changed the list: %v", names2)
	}
	if err := c.Drop(ctx, name); err != nil {
		t.Fatal(err)
	}
	wantIs(t, "Drop again", c.Drop(ctx, name), client.ErrNoCollection)
	_, err = c.Info(ctx, name)
	wantIs(t, "Info dropped", err, client.ErrNoCollection)
}

// pool adds the hand-computed pool of the server tests: cosines .9 .8 .7
// .6 to (1, 0), Q 0 1 0 2, ids 1..4, with payloads, attributes and keys.
func pool(t *testing.T, c *client.Client) string {
	t.Helper()
	name := newColl(t, c, 2, nil)
	for i, s := range []float64{.9, .8, .7, .6} {
		id, err := c.Add(ctx, name, unit(s), &client.AddOptions{
			Q:       ptr([]float64{0, 1, 0, 2}[i]),
			Payload: []byte{'p', byte('1' + i)},
			Attrs:   map[string]any{"n": float64(i + 1), "tag": "pool"},
			Key:     "k" + string(rune('1'+i)),
		})
		if err != nil || id != int64(i+1) {
			t.Fatalf("Add %d = %d, %v", i, id, err)
		}
	}
	return name
}

func ids(rs []client.Result) []int64 {
	var out []int64
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

func TestAddRetrieve(t *testing.T) {
	c := newClient(t, "")
	name := pool(t, c)
	q := []float32{1, 0}

	rs, err := c.Retrieve(ctx, name, q, &client.RetrieveOptions{K2: 4, Lambda: ptr(0.0)})
	if err != nil || !slices.Equal(ids(rs), []int64{1, 2, 3, 4}) {
		t.Fatalf("Retrieve LAMBDA 0 = %+v, %v", rs, err)
	}
	for i, r := range rs {
		want := []float64{.9, .8, .7, .6}[i]
		if math.Abs(r.Sim-want) > 1e-6 || r.Q != []float64{0, 1, 0, 2}[i] || r.Payload != nil || r.Attrs != nil || r.Key != "" {
			t.Fatalf("result %d = %+v, want sim %v", i, r, want)
		}
	}
	// λ = 1 ranks by Q, ties by similarity.
	rs, err = c.Retrieve(ctx, name, q, &client.RetrieveOptions{K1: 4, K2: 4, Lambda: ptr(1.0), WithPayload: true, WithAttrs: true, WithKeys: true})
	if err != nil || !slices.Equal(ids(rs), []int64{4, 2, 1, 3}) {
		t.Fatalf("Retrieve LAMBDA 1 = %+v, %v", rs, err)
	}
	if r := rs[0]; string(r.Payload) != "p4" || r.Attrs["n"] != 4.0 || r.Attrs["tag"] != "pool" || r.Key != "k4" || !(r.Score > rs[1].Score) {
		t.Fatalf("best result = %+v", r)
	}
	// Each WITH option alone.
	rs, err = c.Retrieve(ctx, name, q, &client.RetrieveOptions{K2: 1, WithKeys: true})
	if err != nil || len(rs) != 1 || rs[0].Key == "" || rs[0].Payload != nil {
		t.Fatalf("Retrieve WITHKEYS = %+v, %v", rs, err)
	}
	// STOP (the IVF-PQ early-stop factor) is sent; exact search ignores it, and
	// a factor outside (0, 1] is refused.
	rs, err = c.Retrieve(ctx, name, q, &client.RetrieveOptions{K2: 4, Lambda: ptr(0.0), Stop: 0.4})
	if err != nil || !slices.Equal(ids(rs), []int64{1, 2, 3, 4}) {
		t.Fatalf("Retrieve STOP 0.4 = %+v, %v", rs, err)
	}
	if _, err := c.Retrieve(ctx, name, q, &client.RetrieveOptions{Stop: 1.5}); err == nil {
		t.Fatal("Retrieve STOP 1.5 accepted")
	}
	// DELTA keeps similarities ≥ 0.75.
	rs, err = c.Retrieve(ctx, name, q, &client.RetrieveOptions{Delta: ptr(0.75), Lambda: ptr(0.0)})
	if err != nil || !slices.Equal(ids(rs), []int64{1, 2}) {
		t.Fatalf("Retrieve DELTA = %+v, %v", rs, err)
	}

	// Bad input: typed errors, nothing added.
	_, err = c.Retrieve(ctx, name, []float32{1, 0, 0}, nil)
	wantIs(t, "Retrieve 3-d", err, client.ErrDimension)
	_, err = c.Retrieve(ctx, name, q, &client.RetrieveOptions{K1: -1})
	wantIs(t, "Retrieve K1 -1", err, client.ErrBadParam)
	_, err = c.Retrieve(ctx, "nope", q, nil)
	wantIs(t, "Retrieve nope", err, client.ErrNoCollection)
	_, err = c.Add(ctx, name, []float32{float32(math.NaN()), 1}, nil)
	wantIs(t, "Add NaN", err, client.ErrBadVector)
	_, err = c.Add(ctx, name, []float32{0, 0}, nil)
	wantIs(t, "Add zero cosine vector", err, client.ErrBadVector)
	_, err = c.Add(ctx, name, []float32{1}, nil)
	wantIs(t, "Add 1-d", err, client.ErrDimension)
	_, err = c.Add(ctx, name, q, &client.AddOptions{ID: ptr(int64(2))})
	wantIs(t, "Add ID 2", err, client.ErrIDExists)
	_, err = c.Add(ctx, name, q, &client.AddOptions{Key: "k1"})
	wantIs(t, "Add KEY k1", err, client.ErrKeyExists)
	_, err = c.Add(ctx, name, q, &client.AddOptions{Key: string(make([]byte, 513))})
	wantIs(t, "Add long key", err, client.ErrBadKey)
	_, err = c.Add(ctx, name, q, &client.AddOptions{Q: ptr(math.Inf(1))})
	wantIs(t, "Add Q +Inf", err, client.ErrBadNumber)
	_, err = c.Add(ctx, name, q, &client.AddOptions{TTL: -time.Second})
	wantIs(t, "Add TTL -1", err, client.ErrBadTTL)
	_, err = c.Add(ctx, name, q, &client.AddOptions{Payload: make([]byte, 16<<20+1)})
	wantIs(t, "Add 16 MiB + 1", err, client.ErrPayloadTooLarge)
	deep := map[string]any{}
	for m, i := deep, 0; i < 20; i++ {
		m["a"] = map[string]any{}
		m = m["a"].(map[string]any)
	}
	_, err = c.Add(ctx, name, q, &client.AddOptions{Attrs: deep})
	wantIs(t, "Add attributes 20 deep", err, client.ErrBadAttrs)
	// Mistakes the client finds: nothing is sent, and the error is not
	// the server's.
	var e *client.Error
	_, err = c.Add(ctx, name, q, &client.AddOptions{TTL: 1500 * time.Millisecond})
	if !errors.Is(err, client.ErrBadTTL) || errors.As(err, &e) {
		t.Fatalf("Add TTL 1.5 s: %v, want the client's ErrBadTTL", err)
	}
	_, err = c.Add(ctx, name, q, &client.AddOptions{Attrs: map[string]any{"x": math.NaN()}})
	if err == nil || errors.As(err, &e) {
		t.Fatalf("Add attributes with NaN: %v, want the client's JSON error", err)
	}
	if in, err := c.Info(ctx, name); err != nil || in.Count != 4 || in.NextID != 5 {
		t.Fatalf("after refused adds Info = %+v, %v; want 4 memories", in, err)
	}
}

func TestGetRewardDel(t *testing.T) {
	c := newClient(t, "")
	name := pool(t, c)
	before := time.Now().Add(-time.Minute)
	m, err := c.Get(ctx, name, client.ID(3), nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != 3 || m.Q != 0 || m.Visits != 0 || m.LastReward != 0 || string(m.Payload) != "p3" ||
		m.Attrs["n"] != 3.0 || m.Key != "k3" || !m.Expires.IsZero() || m.Vector != nil ||
		m.Created.Before(before) || m.Updated.Before(m.Created) {
		t.Fatalf("Get 3 = %+v", m)
	}
	if m2, err := c.Get(ctx, name, client.Key("k3"), nil); err != nil || m2.ID != 3 {
		t.Fatalf("Get KEY k3 = %+v, %v", m2, err)
	}
	_, err = c.Get(ctx, name, client.ID(99), nil)
	wantIs(t, "Get 99", err, client.ErrNoMemory)
	_, err = c.Get(ctx, name, client.Key("nokey"), nil)
	wantIs(t, "Get KEY nokey", err, client.ErrNoMemory)

	// α = 0.3: Q ← Q + 0.3(r − Q).
	qs, err := c.Reward(ctx, name, 1, client.ID(1), client.Key("k2"))
	if err != nil || len(qs) != 2 || math.Abs(qs[0]-0.3) > 1e-12 || math.Abs(qs[1]-1) > 1e-12 {
		t.Fatalf("Reward = %v, %v; want [0.3 1]", qs, err)
	}
	if m, _ := c.Get(ctx, name, client.ID(1), nil); m.Visits != 1 || m.LastReward != 1 || m.Q != qs[0] {
		t.Fatalf("after Reward Get 1 = %+v", m)
	}
	// All or nothing.
	_, err = c.Reward(ctx, name, 1, client.ID(1), client.ID(99))
	wantIs(t, "Reward with an unknown id", err, client.ErrNoMemory)
	if m, _ := c.Get(ctx, name, client.ID(1), nil); m.Visits != 1 {
		t.Fatalf("a failed Reward changed memory 1: %+v", m)
	}
	_, err = c.Reward(ctx, name, math.NaN(), client.ID(1))
	wantIs(t, "Reward NaN", err, client.ErrBadNumber)
	_, err = c.Reward(ctx, name, 1)
	wantIs(t, "Reward without refs", err, client.ErrWrongArity)

	// NEXTQ with γ = 0.5, α = 1: Q ← r + 0.5·nextQ.
	g := newColl(t, c, 2, &client.CreateOptions{Alpha: ptr(1.0), Gamma: 0.5})
	id, err := c.Add(ctx, g, []float32{1, 0}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if qs, err := c.RewardNextQ(ctx, g, 1, 2, client.ID(id)); err != nil || !slices.Equal(qs, []float64{2}) {
		t.Fatalf("RewardNextQ = %v, %v; want [2]", qs, err)
	}

	n, err := c.Del(ctx, name, client.ID(1), client.Key("k2"), client.ID(99), client.Key("nokey"))
	if err != nil || n != 2 {
		t.Fatalf("Del = %d, %v; want 2", n, err)
	}
	if in, _ := c.Info(ctx, name); in.Count != 2 {
		t.Fatalf("after Del Info = %+v", in)
	}
	_, err = c.Del(ctx, name)
	wantIs(t, "Del without refs", err, client.ErrWrongArity)
	_, err = c.Del(ctx, "nope", client.ID(1))
	wantIs(t, "Del nope", err, client.ErrNoCollection)
	// A deleted key is free again.
	if _, err := c.Add(ctx, name, []float32{1, 0}, &client.AddOptions{Key: "k2"}); err != nil {
		t.Fatalf("Add with a deleted memory's key: %v", err)
	}
}

func TestAttrsPayloadExpiry(t *testing.T) {
	c := newClient(t, "")
	name := pool(t, c)
	k1 := client.Key("k1")
	if err := c.SetAttr(ctx, name, k1, map[string]any{"user": "u7", "step": 3, "tags": []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	a, err := c.GetAttr(ctx, name, k1)
	if err != nil || a["user"] != "u7" || a["step"] != 3.0 || len(a) != 3 {
		t.Fatalf("GetAttr = %v, %v", a, err)
	}
	if err := c.SetAttr(ctx, name, k1, map[string]any{}); err != nil {
		t.Fatal(err)
	}
	if a, err := c.GetAttr(ctx, name, k1); err != nil || a == nil || len(a) != 0 {
		t.Fatalf("GetAttr after SetAttr {} = %#v, %v; want an empty map", a, err)
	}
	if err := c.SetAttr(ctx, name, k1, nil); err != nil {
		t.Fatal(err)
	}
	if a, err := c.GetAttr(ctx, name, k1); err != nil || a != nil {
		t.Fatalf("GetAttr after SetAttr nil = %#v, %v; want nil", a, err)
	}
	_, err = c.GetAttr(ctx, name, client.ID(99))
	wantIs(t, "GetAttr 99", err, client.ErrNoMemory)
	wantIs(t, "SetAttr 99", c.SetAttr(ctx, name, client.ID(99), map[string]any{}), client.ErrNoMemory)

	if err := c.SetPayload(ctx, name, client.ID(2), []byte("new\x00bytes")); err != nil {
		t.Fatal(err)
	}
	if m, _ := c.Get(ctx, name, client.ID(2), nil); string(m.Payload) != "new\x00bytes" {
		t.Fatalf("payload after SetPayload = %q", m.Payload)
	}
	wantIs(t, "SetPayload 99", c.SetPayload(ctx, name, client.ID(99), nil), client.ErrNoMemory)

	if ttl, err := c.TTL(ctx, name, client.ID(2)); err != nil || ttl != client.NoExpiry {
		t.Fatalf("TTL = %v, %v; want NoExpiry", ttl, err)
	}
	if err := c.Expire(ctx, name, client.ID(2), 100*time.Second); err != nil {
		t.Fatal(err)
	}
	if ttl, err := c.TTL(ctx, name, client.ID(2)); err != nil || ttl < 99*time.Second || ttl > 100*time.Second {
		t.Fatalf("TTL after Expire 100 s = %v, %v", ttl, err)
	}
	if m, _ := c.Get(ctx, name, client.ID(2), nil); m.Expires.Before(time.Now().Add(98 * time.Second)) {
		t.Fatalf("Expires = %v", m.Expires)
	}
	if had, err := c.Persist(ctx, name, client.ID(2)); err != nil || !had {
		t.Fatalf("Persist = %v, %v; want true", had, err)
	}
	if had, err := c.Persist(ctx, name, client.ID(2)); err != nil || had {
		t.Fatalf("Persist again = %v, %v; want false", had, err)
	}
	if err := c.Expire(ctx, name, client.ID(2), 1500*time.Millisecond); !errors.Is(err, client.ErrBadTTL) {
		t.Fatalf("Expire 1.5 s: %v, want ErrBadTTL", err)
	}
	if err := c.Expire(ctx, name, client.ID(2), 0); err != nil {
		t.Fatal(err)
	}
	_, err = c.Get(ctx, name, client.ID(2), nil)
	wantIs(t, "Get after Expire 0", err, client.ErrNoMemory)
	wantIs(t, "Expire 99", c.Expire(ctx, name, client.ID(99), time.Second), client.ErrNoMemory)
	_, err = c.TTL(ctx, name, client.ID(99))
	wantIs(t, "TTL 99", err, client.ErrNoMemory)

	id, err := c.Add(ctx, name, []float32{1, 0}, &client.AddOptions{TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if ttl, err := c.TTL(ctx, name, client.ID(id)); err != nil || ttl != time.Hour {
		t.Fatalf("TTL of an add with TTL 1h = %v, %v", ttl, err)
	}
}

func TestCheckpointVerify(t *testing.T) {
	c := newClient(t, "")
	name := pool(t, c)
	if err := c.Checkpoint(ctx, false); err != nil {
		t.Fatal(err)
	}
	if err := c.Checkpoint(ctx, true); err != nil {
		t.Fatal(err)
	}
	r, err := c.Verify(ctx, name)
	if err != nil || r.Rows != 4 || r.Payloads != 4 || r.Damaged != 0 || r.ChecksumFile != "checked" || r.Index != "none" {
		t.Fatalf("Verify = %+v, %v", r, err)
	}
	_, err = c.Verify(ctx, "nope")
	wantIs(t, "Verify nope", err, client.ErrNoCollection)
}
