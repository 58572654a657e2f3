package engine

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/memrl/memrl/engine/filter"
	"github.com/memrl/memrl/vfs"
)

// pruneModelMem is the brute-force model's view of one memory.
type pruneModelMem struct {
	q       float64
	visits  uint64
	created time.Time
	updated time.Time
	g       int // attribute .g
}

// modelPrune is PruneOptions' specification, evaluated naively.
func modelPrune(mems map[uint64]pruneModelMem, o PruneOptions, g int, now time.Time) []uint64 {
	var out []uint64
	type cand struct {
		id uint64
		m  pruneModelMem
	}
	var kept []cand
	for id, m := range mems {
		if o.Filter != nil && m.g != g {
			continue
		}
		hit := o.HasQBelow || o.HasOlder || o.HasIdle
		if o.HasQBelow && !(m.q < o.QBelow && (!o.HasMinVisits || m.visits >= o.MinVisits)) {
			hit = false
		}
		if o.HasOlder && !(now.Sub(m.created) > o.Older) {
			hit = false
		}
		if o.HasIdle && !(now.Sub(m.updated) > o.Idle) {
			hit = false
		}
		if hit {
			out = append(out, id)
		} else {
			kept = append(kept, cand{id, m})
		}
	}
	if o.HasMaxCount && len(kept) > o.MaxCount {
		slices.SortFunc(kept, func(a, b cand) int {
			if a.m.q != b.m.q {
				if a.m.q > b.m.q {
					return -1
				}
				return 1
			}
			if !a.m.created.Equal(b.m.created) {
				return b.m.created.Compare(a.m.created)
			}
			if a.id > b.id {
				return -1
			}
			return 1
		})
		for _, k := range kept[o.MaxCount:] {
			out = append(out, k.id)
		}
	}
	slices.Sort(out)
	return out
}

func randomPruneOptions(rng *rand.Rand) (PruneOptions, int) {
	var o PruneOptions
	for !o.HasQBelow && !o.HasOlder && !o.HasIdle && !o.HasMaxCount {
		if rng.Intn(2) == 0 {
			o.HasQBelow, o.QBelow = true, float64(rng.Intn(5))-0.5
			if rng.Intn(2) == 0 {
				o.HasMinVisits, o.MinVisits = true, uint64(rng.Intn(3))
			}
		}
		if rng.Intn(3) == 0 {
			o.HasOlder, o.Older = true, time.Duration(rng.Intn(3000))*time.Second
		}
		if rng.Intn(3) == 0 {
			o.HasIdle, o.Idle = true, time.Duration(rng.Intn(3000))*time.Second
		}
		if rng.Intn(3) == 0 {
			o.HasMaxCount, o.MaxCount = true, rng.Intn(60)
		}
	}
	g := rng.Intn(3)
	if rng.Intn(2) == 0 {
		o.Filter, _ = filter.Parse(fmt.Sprintf(".g == %d", g))
	}
	return o, g
}

// TestPruneModel: random memories with random Q, visits, ages and uses
// (on a fake clock), pruned by random criteria and their combinations,
// delete exactly what a brute-force model says; DRYRUN counts the same and
// changes nothing; the deletes are durable once the ticket is, and stay
// deleted after a crash and replay.
func TestPruneModel(t *testing.T) {
	for seed := int64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { testPruneModel(t, seed) })
	}
}

func testPruneModel(t *testing.T, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	clk := newFakeClock()
	fs := vfs.NewMemFS()
	opts := Options{Now: clk.Now, SweepInterval: -1}
	db, c := openAttrsDB(t, fs, opts)
	var ids []uint64
	for i := 0; i < 150; i++ {
		clk.advance(time.Duration(rng.Intn(3)) * 10 * time.Second) // some share a creation time
		v := []float32{rng.Float32(), rng.Float32(), rng.Float32(), rng.Float32()}
		req := AddRequest{Vector: v, Attrs: []byte(fmt.Sprintf(`{"g":%d}`, rng.Intn(3))), HasQ: true, Q: float64(rng.Intn(5))}
		if rng.Intn(10) == 0 {
			req.TTL = time.Duration(1+rng.Intn(3000)) * time.Second // some expire: never pruned nor counted
		}
		id, err := c.Add(req)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for i := 0; i < 100; i++ {
		clk.advance(time.Duration(rng.Intn(20)) * time.Second)
		r := float64(rng.Intn(3)) - 1
		if _, err := c.Reward(r, []uint64{ids[rng.Intn(len(ids))]}, nil); err != nil && !errors.Is(err, ErrNoMemory) {
			t.Fatal(err)
		}
	}
	model := func() map[uint64]pruneModelMem {
		mems := map[uint64]pruneModelMem{}
		for _, id := range ids {
			mi, err := c.Get(id)
			if errors.Is(err, ErrNoMemory) {
				continue
			} else if err != nil {
				t.Fatal(err)
			}
			var g int
			fmt.Sscanf(string(mi.Attrs), `{"g":%d}`, &g)
			mems[id] = pruneModelMem{q: mi.Q, visits: mi.Visits, created: mi.Created, updated: mi.Updated, g: g}
		}
		return mems
	}
	for round := 0; round < 40; round++ {
		clk.advance(time.Duration(rng.Intn(200)) * time.Second)
		mems := model()
		o, g := randomPruneOptions(rng)
		want := modelPrune(mems, o, g, clk.Now())
		o.DryRun = true
		n, tk, err := c.Prune(o)
		if err != nil || n != len(want) || tk != 0 {
			t.Fatalf("round %d: dry run %+v = %d, %d, %v; want %d", round, o, n, tk, err, len(want))
		}
		if after := model(); len(after) != len(mems) {
			t.Fatalf("round %d: the dry run deleted %d memories", round, len(mems)-len(after))
		}
		if round%4 != 0 {
			continue
		}
		o.DryRun = false
		n, tk, err = c.Prune(o)
		if err != nil || n != len(want) {
			t.Fatalf("round %d: prune %+v = %d, %v; want %d", round, o, n, err, len(want))
		}
		if err := db.WaitDurable(tk); err != nil {
			t.Fatal(err)
		}
		after := model()
		for id := range mems {
			_, live := after[id]
			if pruned := slices.Contains(want, id); live == pruned {
				t.Fatalf("round %d: memory %d live=%v, pruned by the model=%v", round, id, live, pruned)
			}
		}
	}
	// Deleted stay deleted: replay a crash that drops everything unsynced.
	before := model()
	_, db = crashOpen2(t, fs, opts, seed)
	defer db.Close()
	c, _ = db.Collection("c")
	if after := model(); len(after) != len(before) {
		t.Fatalf("after a crash: %d memories live, want %d", len(after), len(before))
	}
	for id := range before {
		if _, err := c.Get(id); err != nil {
			t.Fatalf("after a crash, memory %d: %v", id, err)
		}
	}
}

// TestPruneMaxCountTies: MAXCOUNT keeps the highest Q, then the newer,
// then the higher id.
func TestPruneMaxCountTies(t *testing.T) {
	clk := newFakeClock()
	db, c := openAttrsDB(t, vfs.NewMemFS(), Options{Now: clk.Now, SweepInterval: -1})
	defer db.Close()
	add := func(id uint64, q float64) uint64 {
		id, err := c.Add(AddRequest{Vector: []float32{1, 2, 3, 4}, ID: id, HasID: true, HasQ: true, Q: q})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	a := add(100, 1) // older, though of a higher id
	clk.advance(time.Second)
	b := add(10, 1)  // newer, same creation time as cc
	cc := add(11, 1) // newer, same creation time, higher id
	d := add(1, 2)   // highest Q
	for keep := 0; keep <= 5; keep++ {
		n, _, err := c.Prune(PruneOptions{HasMaxCount: true, MaxCount: keep, DryRun: true})
		if err != nil || n != max(4-keep, 0) {
			t.Fatalf("MAXCOUNT %d dry run: %d, %v", keep, n, err)
		}
	}
	n, _, err := c.Prune(PruneOptions{HasMaxCount: true, MaxCount: 3})
	if err != nil || n != 1 {
		t.Fatalf("MAXCOUNT 3: %d, %v", n, err)
	}
	n, _, err = c.Prune(PruneOptions{HasMaxCount: true, MaxCount: 2})
	if err != nil || n != 1 {
		t.Fatalf("MAXCOUNT 2: %d, %v", n, err)
	}
	for id, live := range map[uint64]bool{a: false, b: false, cc: true, d: true} {
		if _, err := c.Get(id); (err == nil) != live {
			t.Fatalf("memory %d: %v, want live=%v", id, err, live)
		}
	}
}

// TestPruneBadOptions: a prune with no criterion or a bad value fails with
// its sentinel and deletes nothing.
func TestPruneBadOptions(t *testing.T) {
	db, c := openAttrsDB(t, vfs.NewMemFS(), Options{SweepInterval: -1})
	defer db.Close()
	id, err := c.Add(AddRequest{Vector: []float32{1, 2, 3, 4}})
	if err != nil {
		t.Fatal(err)
	}
	e, _ := filter.Parse(".g == 1")
	for _, tc := range []struct {
		o    PruneOptions
		want error
	}{
		{PruneOptions{}, ErrNoCriterion},
		{PruneOptions{Filter: e}, ErrNoCriterion},
		{PruneOptions{HasMinVisits: true, MinVisits: 1}, ErrNoCriterion},
		{PruneOptions{HasMinVisits: true, MinVisits: 1, HasOlder: true}, ErrBadParam},
		{PruneOptions{HasQBelow: true, QBelow: math.NaN()}, ErrBadNumber},
		{PruneOptions{HasQBelow: true, QBelow: math.Inf(1)}, ErrBadNumber},
		{PruneOptions{HasOlder: true, Older: -time.Second}, ErrBadParam},
		{PruneOptions{HasIdle: true, Idle: -1}, ErrBadParam},
		{PruneOptions{HasIdle: true, Idle: MaxPruneAge + 1}, ErrBadParam},
		{PruneOptions{HasMaxCount: true, MaxCount: -1}, ErrBadParam},
	} {
		if n, _, err := c.Prune(tc.o); !errors.Is(err, tc.want) || n != 0 {
			t.Fatalf("%+v: %d, %v; want %v", tc.o, n, err, tc.want)
		}
	}
	if _, err := c.Get(id); err != nil {
		t.Fatalf("after bad prunes: %v", err)
	}
}
