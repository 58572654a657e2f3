package engine

import (
	"bytes"
	"errors"
	"math"
	"math/rand"
	"slices"
	"sync"
	"testing"

	"github.com/memrl/memrl/wal"
)

func openTemp(t *testing.T, opts Options) (*DB, string) {
	t.Helper()
	dir := t.TempDir()
	opts.Logf = t.Logf
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, dir
}

func mustColl(t *testing.T, db *DB, name string, cfg Config) *Collection {
	t.Helper()
	if err := db.Create(name, cfg); err != nil {
		t.Fatal(err)
	}
	c, err := db.Collection(name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func add(t *testing.T, c *Collection, id uint64, q float64, v ...float32) {
	t.Helper()
	if _, err := c.Add(AddRequest{Vector: v, ID: id, HasID: true, Q: q, HasQ: true}); err != nil {
		t.Fatal(err)
	}
}

func retrieveIDs(t *testing.T, c *Collection, q []float32, opt RetrieveOptions) []uint64 {
	t.Helper()
	res, err := c.Retrieve(q, opt)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]uint64, len(res))
	for i, r := range res {
		out[i] = r.ID
	}
	return out
}

// handColl holds four memories on the unit circle at angles whose cosine to
// the query (1, 0) is .9 .8 .7 .6, with Q 0 1 0 2: the pool of
// TestPhase2HandComputed.
func handColl(t *testing.T, db *DB) *Collection {
	c := mustColl(t, db, "hand", NewConfig(2))
	for i, s := range []float64{.9, .8, .7, .6} {
		add(t, c, uint64(i+1), []float64{0, 1, 0, 2}[i], float32(s), float32(math.Sqrt(1-s*s)))
	}
	return c
}

func TestRetrieveTwoPhase(t *testing.T) {
	db, _ := openTemp(t, Options{Sync: wal.SyncNone})
	c := handColl(t, db)
	q := []float32{1, 0}
	opt := NewRetrieveOptions()
	opt.K2 = 4
	if got := retrieveIDs(t, c, q, opt); !slices.Equal(got, []uint64{2, 1, 4, 3}) {
		t.Fatalf("λ=.5: %v", got)
	}
	opt.Lambda = 0
	if got := retrieveIDs(t, c, q, opt); !slices.Equal(got, []uint64{1, 2, 3, 4}) {
		t.Fatalf("λ=0: %v", got)
	}
	opt.Lambda = 1
	if got := retrieveIDs(t, c, q, opt); !slices.Equal(got, []uint64{4, 2, 1, 3}) {
		t.Fatalf("λ=1: %v", got)
	}
	// DELTA .75 keeps ids 1 and 2; λ=1 then orders them by Q.
	opt.Delta, opt.HasDelta = 0.75, true
	if got := retrieveIDs(t, c, q, opt); !slices.Equal(got, []uint64{2, 1}) {
		t.Fatalf("DELTA: %v", got)
	}
	// K1 = 2 without DELTA: the pool is the two most similar.
	opt.HasDelta, opt.K1 = false, 2
	if got := retrieveIDs(t, c, q, opt); !slices.Equal(got, []uint64{2, 1}) {
		t.Fatalf("K1=2: %v", got)
	}
	res, err := c.Retrieve(q, NewRetrieveOptions())
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(res[0].Sim-0.8) > 1e-6 || res[0].Q != 1 {
		t.Fatalf("result fields: %+v", res[0])
	}
}

func TestMetrics(t *testing.T) {
	db, _ := openTemp(t, Options{Sync: wal.SyncNone})
	l2 := mustColl(t, db, "l2", Config{Dim: 2, Metric: L2, Alpha: .3})
	ip := mustColl(t, db, "ip", Config{Dim: 2, Metric: IP, Alpha: .3})
	for _, c := range []*Collection{l2, ip} {
		add(t, c, 1, 0, 1, 0)
		add(t, c, 2, 0, 10, 0)
		add(t, c, 3, 0, -1, 0)
	}
	opt := NewRetrieveOptions()
	opt.Lambda = 0
	res, _ := l2.Retrieve([]float32{2, 0}, opt)
	if res[0].ID != 1 || res[0].Sim != -1 || res[1].ID != 3 || res[1].Sim != -9 {
		t.Fatalf("L2: %+v", res)
	}
	res, _ = ip.Retrieve([]float32{2, 0}, opt)
	if res[0].ID != 2 || res[0].Sim != 20 {
		t.Fatalf("IP: %+v", res)
	}
}

func TestRewardArithmetic(t *testing.T) {
	db, _ := openTemp(t, Options{Sync: wal.SyncNone})
	c := mustColl(t, db, "r", NewConfig(2)) // α .3, γ 0
	add(t, c, 1, 0, 1, 0)
	add(t, c, 2, 0.5, 0, 1)
	q, err := c.Reward(1, []uint64{1, 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(q[0]-0.3) > 1e-12 || math.Abs(q[1]-0.65) > 1e-12 {
		t.Fatalf("γ=0: %v", q)
	}
	// NEXTQ is ignored when γ = 0.
	next := 100.0
	q, _ = c.Reward(1, []uint64{1}, &next)
	if math.Abs(q[0]-0.51) > 1e-12 {
		t.Fatalf("γ=0 with NEXTQ: %v", q)
	}
	g := mustColl(t, db, "g", Config{Dim: 2, Alpha: 0.5, Gamma: 0.9})
	add(t, g, 1, 0, 1, 0)
	next = 1
	q, _ = g.Reward(1, []uint64{1}, &next) // 0 + .5(1 + .9 - 0)
	if math.Abs(q[0]-0.95) > 1e-12 {
		t.Fatalf("γ=.9: %v", q)
	}
	m, err := g.Get(1)
	if err != nil || m.Visits != 1 || m.LastReward != 1 || m.Q != q[0] {
		t.Fatalf("Get after reward: %+v %v", m, err)
	}
	// An unknown id among known ones changes nothing.
	if _, err := c.Reward(1, []uint64{1, 99}, nil); !errors.Is(err, ErrNoMemory) {
		t.Fatalf("unknown id: %v", err)
	}
	if m, _ := c.Get(1); m.Visits != 2 {
		t.Fatalf("failed reward changed visits: %d", m.Visits)
	}
}

func TestConcurrentRewardsLoseNothing(t *testing.T) {
	db, dir := openTemp(t, Options{}) // SyncAlways: every reward fsynced
	c := mustColl(t, db, "c", Config{Dim: 4, Alpha: 0.1})
	add(t, c, 1, 0, 1, 2, 3, 4)
	const workers, each = 16, 40
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if _, err := c.Reward(1, []uint64{1}, nil); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	want := 1 - math.Pow(0.9, workers*each)
	check := func(c *Collection) {
		m, err := c.Get(1)
		if err != nil {
			t.Fatal(err)
		}
		if m.Visits != workers*each || math.Abs(m.Q-want) > 1e-9 {
			t.Fatalf("visits %d Q %v, want %d %v", m.Visits, m.Q, workers*each, want)
		}
	}
	check(c)
	// And the log replays to the same state.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db2, err := Open(dir, Options{Logf: t.Logf, CheckpointInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	c2, _ := db2.Collection("c")
	check(c2)
}

func TestBadInputChangesNothing(t *testing.T) {
	db, _ := openTemp(t, Options{Sync: wal.SyncNone})
	c := mustColl(t, db, "b", NewConfig(3))
	add(t, c, 5, 0, 1, 2, 3)
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	cases := []struct {
		name string
		err  error
		do   func() error
	}{
		{"dim", ErrDimension, func() error { _, err := c.Add(AddRequest{Vector: []float32{1, 2}}); return err }},
		{"nan", ErrBadVector, func() error { _, err := c.Add(AddRequest{Vector: []float32{1, nan, 2}}); return err }},
		{"inf", ErrBadVector, func() error { _, err := c.Add(AddRequest{Vector: []float32{1, inf, 2}}); return err }},
		{"zero cosine", ErrBadVector, func() error { _, err := c.Add(AddRequest{Vector: []float32{0, 0, 0}}); return err }},
		{"dup id", ErrIDExists, func() error {
			_, err := c.Add(AddRequest{Vector: []float32{1, 1, 1}, ID: 5, HasID: true})
			return err
		}},
		{"nan q", ErrBadNumber, func() error {
			_, err := c.Add(AddRequest{Vector: []float32{1, 1, 1}, Q: math.NaN(), HasQ: true})
			return err
		}},
		{"big payload", ErrPayloadTooLarge, func() error {
			_, err := c.Add(AddRequest{Vector: []float32{1, 1, 1}, Payload: make([]byte, MaxPayload+1)})
			return err
		}},
		{"query dim", ErrDimension, func() error { _, err := c.Retrieve([]float32{1}, NewRetrieveOptions()); return err }},
		{"query nan", ErrBadVector, func() error { _, err := c.Retrieve([]float32{nan, 1, 1}, NewRetrieveOptions()); return err }},
		{"K1", ErrBadParam, func() error {
			o := NewRetrieveOptions()
			o.K1 = -1
			_, err := c.Retrieve([]float32{1, 1, 1}, o)
			return err
		}},
		{"lambda", ErrBadParam, func() error {
			o := NewRetrieveOptions()
			o.Lambda = 2
			_, err := c.Retrieve([]float32{1, 1, 1}, o)
			return err
		}},
		{"reward nan", ErrBadNumber, func() error { _, err := c.Reward(math.NaN(), []uint64{5}, nil); return err }},
		{"reward unknown", ErrNoMemory, func() error { _, err := c.Reward(1, []uint64{6}, nil); return err }},
		{"get unknown", ErrNoMemory, func() error { _, err := c.Get(6); return err }},
		{"create exists", ErrCollectionExists, func() error { return db.Create("b", NewConfig(3)) }},
		{"create name", ErrBadName, func() error { return db.Create("a b", NewConfig(3)) }},
		{"create dim", ErrBadParam, func() error { return db.Create("x", NewConfig(0)) }},
		{"create alpha", ErrBadParam, func() error { return db.Create("x", Config{Dim: 2, Alpha: 2}) }},
		{"unknown coll", ErrNoCollection, func() error { _, err := db.Collection("nope"); return err }},
		{"drop unknown", ErrNoCollection, func() error { return db.Drop("nope") }},
	}
	for _, tc := range cases {
		if err := tc.do(); !errors.Is(err, tc.err) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.err)
		}
	}
	info, _ := c.Info()
	if info.Count != 1 || info.Rows != 1 {
		t.Fatalf("bad input changed the collection: %+v", info)
	}
	if m, _ := c.Get(5); m.Visits != 0 || m.Q != 0 {
		t.Fatalf("bad input changed memory 5: %+v", m)
	}
	if got := db.List(); len(got) != 1 || got[0] != "b" {
		t.Fatalf("collections %v", got)
	}
}

func TestDeleteAndAutoIDs(t *testing.T) {
	db, _ := openTemp(t, Options{Sync: wal.SyncNone})
	c := mustColl(t, db, "d", NewConfig(2))
	var got []uint64
	for i := 0; i < 5; i++ {
		id, err := c.Add(AddRequest{Vector: []float32{1, float32(i)}})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, id)
	}
	if !slices.Equal(got, []uint64{1, 2, 3, 4, 5}) {
		t.Fatalf("auto ids %v", got)
	}
	add(t, c, 100, 0, 1, 1)
	if id, _ := c.Add(AddRequest{Vector: []float32{1, 1}}); id != 101 {
		t.Fatalf("auto id after 100: %d", id)
	}
	n, err := c.Delete([]uint64{2, 3, 3, 999})
	if err != nil || n != 2 {
		t.Fatalf("Delete = %d, %v", n, err)
	}
	opt := NewRetrieveOptions()
	opt.K1, opt.K2 = 100, 100
	for _, id := range retrieveIDs(t, c, []float32{1, 1}, opt) {
		if id == 2 || id == 3 {
			t.Fatalf("deleted id %d retrieved", id)
		}
	}
	if _, err := c.Get(2); !errors.Is(err, ErrNoMemory) {
		t.Fatalf("Get deleted: %v", err)
	}
	// A deleted id may be used again.
	add(t, c, 2, 0, 0, 1)
}

func TestPersistenceAcrossReopenAndCheckpoint(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(1))
	open := func() *DB {
		db, err := Open(dir, Options{Logf: t.Logf, CheckpointInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	db := open()
	if err := db.Create("p", Config{Dim: 8, Metric: L2, Alpha: 0.5, QInit: 0.25}); err != nil {
		t.Fatal(err)
	}
	c, _ := db.Collection("p")
	vecs := map[uint64][]float32{}
	for i := 0; i < 300; i++ {
		v := make([]float32, 8)
		for j := range v {
			v[j] = rng.Float32()
		}
		id, err := c.Add(AddRequest{Vector: v, Payload: []byte{byte(i), 'x', byte(i >> 8)}})
		if err != nil {
			t.Fatal(err)
		}
		vecs[id] = v
		if i == 150 {
			if err := db.Checkpoint(); err != nil {
				t.Fatal(err)
			}
		}
	}
	c.Reward(1, []uint64{10, 20}, nil)
	c.Delete([]uint64{30})
	db.Create("gone", NewConfig(2))
	db.Drop("gone")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 2; round++ {
		db = open()
		c, err := db.Collection("p")
		if err != nil {
			t.Fatal(err)
		}
		info, _ := c.Info()
		if info.Count != 299 || info.Config.QInit != 0.25 || info.Config.Metric != L2 {
			t.Fatalf("round %d: info %+v", round, info)
		}
		m, err := c.Get(10)
		if err != nil || m.Q != 0.625 || m.Visits != 1 || !bytes.Equal(m.Payload, []byte{9, 'x', 0}) {
			t.Fatalf("round %d: memory 10 = %+v, %v", round, m, err)
		}
		if _, err := c.Get(30); !errors.Is(err, ErrNoMemory) {
			t.Fatalf("deleted memory back: %v", err)
		}
		for id, v := range vecs {
			if id == 30 {
				continue
			}
			opt := NewRetrieveOptions()
			opt.K1, opt.K2, opt.Lambda = 1, 1, 0
			if got := retrieveIDs(t, c, v, opt); len(got) != 1 || got[0] != id {
				t.Fatalf("round %d: nearest to memory %d is %v", round, id, got)
			}
		}
		if got := db.List(); len(got) != 1 {
			t.Fatalf("collections %v", got)
		}
		// The second round opens after Close's checkpoint.
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestValuesAreBounded(t *testing.T) {
	db, _ := openTemp(t, Options{Sync: wal.SyncNone})
	c := mustColl(t, db, "v", Config{Dim: 2, Alpha: 1, Gamma: 1})
	add(t, c, 1, MaxValue, 1, 0)
	add(t, c, 2, -MaxValue, 0, 1)
	next := MaxValue
	// The largest allowed values: Q reaches 2·MaxValue and stays finite.
	for i := 0; i < 3; i++ {
		q, err := c.Reward(MaxValue, []uint64{1, 2}, &next)
		if err != nil || q[0] != 2*MaxValue || q[1] != 2*MaxValue {
			t.Fatalf("Reward at the bounds: %v %v", q, err)
		}
	}
	for _, bad := range []float64{MaxValue * 1.5, -2e300, math.Inf(1)} {
		if _, err := c.Reward(bad, []uint64{1}, nil); !errors.Is(err, ErrBadNumber) {
			t.Errorf("reward %v: %v", bad, err)
		}
		if _, err := c.Add(AddRequest{Vector: []float32{1, 1}, Q: bad, HasQ: true}); !errors.Is(err, ErrBadNumber) {
			t.Errorf("Q %v: %v", bad, err)
		}
	}
	// A long id list with repeats updates each memory once.
	ids := make([]uint64, 100)
	for i := range ids {
		ids[i] = uint64(i%2 + 1)
	}
	before, _ := c.Get(1)
	if _, err := c.Reward(0, ids, nil); err != nil {
		t.Fatal(err)
	}
	if after, _ := c.Get(1); after.Visits != before.Visits+1 {
		t.Fatalf("visits %d -> %d for a memory named 50 times", before.Visits, after.Visits)
	}
}

func TestIDsStayBelow2To63(t *testing.T) {
	db, _ := openTemp(t, Options{Sync: wal.SyncNone})
	c := mustColl(t, db, "ids", NewConfig(2))
	if _, err := c.Add(AddRequest{Vector: []float32{1, 0}, ID: MaxID + 1, HasID: true}); !errors.Is(err, ErrBadParam) {
		t.Fatalf("ID 2^63: %v", err)
	}
	add(t, c, MaxID, 0, 1, 0)
	if _, err := c.Add(AddRequest{Vector: []float32{1, 0}}); !errors.Is(err, ErrBadParam) {
		t.Fatalf("automatic id after MaxID: %v", err)
	}
	if info, _ := c.Info(); info.Count != 1 {
		t.Fatalf("count %d", info.Count)
	}
}
