package engine

import (
	"math"
	"testing"

	"github.com/memrl/memrl/wal"
)

// The pool: similarities .9 .8 .7 .6 and Q 0 1 0 2 for ids 1..4.
// sim: mean .75, population std sqrt(.0125)=.111803; z = 1.3416 .4472 -.4472 -1.3416
// Q:   mean .75, std sqrt((.5625+.0625+.5625+1.5625)/4)=.829156; z = -.9045 .3015 -.9045 1.5076
func handPool() []scored {
	return []scored{
		{id: 1, sim: .9, q: 0},
		{id: 2, sim: .8, q: 1},
		{id: 3, sim: .7, q: 0},
		{id: 4, sim: .6, q: 2},
	}
}

func ids(s []scored) []uint64 {
	out := make([]uint64, len(s))
	for i := range s {
		out[i] = s[i].id
	}
	return out
}

func eqIDs(t *testing.T, got []scored, want ...uint64) {
	t.Helper()
	g := ids(got)
	if len(g) != len(want) {
		t.Fatalf("ids %v, want %v", g, want)
	}
	for i := range g {
		if g[i] != want[i] {
			t.Fatalf("ids %v, want %v", g, want)
		}
	}
}

func TestPhase2HandComputed(t *testing.T) {
	// λ = 0.5: scores .2186 .3744 -.6758 .0830 → 2, 1, 4, 3.
	got := rankPhase2(handPool(), 0.5, 4)
	eqIDs(t, got, 2, 1, 4, 3)
	want := map[uint64]float64{
		1: 0.5*1.3416408 + 0.5*-0.9045340,
		2: 0.5*0.4472136 + 0.5*0.3015113,
		3: 0.5*-0.4472136 + 0.5*-0.9045340,
		4: 0.5*-1.3416408 + 0.5*1.5075567,
	}
	for _, s := range got {
		if math.Abs(s.score-want[s.id]) > 1e-6 {
			t.Errorf("id %d score %.7f, want %.7f", s.id, s.score, want[s.id])
		}
	}
}

func TestPhase2LambdaZeroIsSimilarityOrder(t *testing.T) {
	eqIDs(t, rankPhase2(handPool(), 0, 4), 1, 2, 3, 4)
}

func TestPhase2LambdaOneIsQOrder(t *testing.T) {
	// Q ties (ids 1 and 3, Q 0) break by similarity.
	eqIDs(t, rankPhase2(handPool(), 1, 4), 4, 2, 1, 3)
}

func TestPhase2K2Truncates(t *testing.T) {
	eqIDs(t, rankPhase2(handPool(), 0.5, 2), 2, 1)
}

func TestPhase2ZeroStdGivesZero(t *testing.T) {
	pool := []scored{{id: 1, sim: .5, q: 3}, {id: 2, sim: .5, q: 3}}
	for _, s := range rankPhase2(pool, 0.5, 2) {
		if s.score != 0 {
			t.Fatalf("score %v with zero std", s.score)
		}
	}
	if got := rankPhase2(nil, 0.5, 5); len(got) != 0 {
		t.Fatal("empty pool")
	}
}

func TestPhase2QClipped(t *testing.T) {
	// 99 memories with Q 0 and one with Q 1000: its z-score is
	// sqrt(99) ≈ 9.95, clipped to 3.
	pool := make([]scored, 100)
	for i := range pool {
		pool[i] = scored{id: uint64(i + 1), sim: 0.5}
	}
	pool[7].q = 1000
	got := rankPhase2(pool, 1, 1)
	if got[0].id != 8 || got[0].score != 3 {
		t.Fatalf("top %d score %v, want id 8 score 3", got[0].id, got[0].score)
	}
}

// TestPhase2RawQ: with RawQ, Q enters the score as it is (clipped to
// ±RawQClip), not z-scored over the pool, so a pool whose Q values are all
// close is ranked by similarity, and the score is (1-λ)·z(sim) + λ·Q.
func TestPhase2RawQ(t *testing.T) {
	// λ = 0.5, raw Q 0 1 0 2 → clipped 0 1 0 2:
	// scores .6708 .7236 -.2236 .3292 → 2, 1, 4, 3.
	got := rankPhase2Opts(handPool(), 0.5, 4, true)
	eqIDs(t, got, 2, 1, 4, 3)
	want := map[uint64]float64{
		1: 0.5*1.3416408 + 0.5*0,
		2: 0.5*0.4472136 + 0.5*1,
		3: 0.5*-0.4472136 + 0.5*0,
		4: 0.5*-1.3416408 + 0.5*2,
	}
	for _, s := range got {
		if math.Abs(s.score-want[s.id]) > 1e-6 {
			t.Errorf("id %d score %.7f, want %.7f", s.id, s.score, want[s.id])
		}
	}
	// Q differences of 0.01 are amplified by z-scoring into a full
	// ±1 swing that overrides similarity at λ = 0.5; raw, they barely
	// move it.
	pool := func() []scored {
		return []scored{{id: 1, sim: .9, q: .50}, {id: 2, sim: .8, q: .51}, {id: 3, sim: .1, q: .50}}
	}
	eqIDs(t, rankPhase2Opts(pool(), 0.5, 3, false), 2, 1, 3)
	eqIDs(t, rankPhase2Opts(pool(), 0.5, 3, true), 1, 2, 3)
	// Clipped: a Q of 1e15 counts as RawQClip.
	big := rankPhase2Opts([]scored{{id: 1, sim: .9, q: 1e15}, {id: 2, sim: .8, q: 0}}, 1, 2, true)
	if big[0].id != 1 || big[0].score != RawQClip {
		t.Fatalf("raw Q 1e15 at λ=1: %+v, want id 1 with score %v", big, RawQClip)
	}
}

// TestRetrieveRawQ: Collection.Retrieve honours RetrieveOptions.RawQ.
func TestRetrieveRawQ(t *testing.T) {
	db, _ := openTemp(t, Options{Sync: wal.SyncNone, CheckpointInterval: -1})
	c := mustColl(t, db, "rawq", Config{Dim: 2, Metric: Cosine, Alpha: 1})
	// The most similar memory has Q .50, the next .51, a far one .50.
	a, err := c.Add(AddRequest{Vector: []float32{1, 0.1}, Q: 0.50, HasQ: true})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Add(AddRequest{Vector: []float32{1, 0.5}, Q: 0.51, HasQ: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Add(AddRequest{Vector: []float32{0, 1}, Q: 0.50, HasQ: true}); err != nil {
		t.Fatal(err)
	}
	opt := NewRetrieveOptions()
	opt.K2 = 1
	res, err := c.Retrieve([]float32{1, 0}, opt)
	if err != nil || len(res) != 1 || res[0].ID != b {
		t.Fatalf("z-scored Q: %+v %v, want id %d", res, err, b)
	}
	opt.RawQ = true
	res, err = c.Retrieve([]float32{1, 0}, opt)
	if err != nil || len(res) != 1 || res[0].ID != a {
		t.Fatalf("raw Q: %+v %v, want id %d", res, err, a)
	}
}
