package engine

import (
	"errors"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/memrl/memrl/wal"
)

// checkFinite fails the test if any similarity or score is NaN or infinite.
func checkFinite(t *testing.T, what string, res []Result) {
	t.Helper()
	for _, r := range res {
		if !finite(r.Sim) || !finite(r.Score) {
			t.Fatalf("%s: memory %d has sim %v, score %v", what, r.ID, r.Sim, r.Score)
		}
	}
}

// TestHugeComponentsRefused (issue 14): in an L2 collection, VALUES 2 3e38
// 3e38 made every score NaN; in IP, similarities came back inf or NaN.
// Components beyond ±MaxComponent are refused in L2 and IP collections, on
// add and on retrieve, and vectors at the bound, at the largest dimension,
// give finite similarities and scores.
func TestHugeComponentsRefused(t *testing.T) {
	db, _ := openTemp(t, Options{Sync: wal.SyncNone})
	for _, m := range []Metric{L2, IP} {
		c := mustColl(t, db, "huge-"+m.String(), Config{Dim: 2, Metric: m})
		add(t, c, 1, 0, 1, 2)
		for _, v := range [][]float32{{3e38, 3e38}, {1, -3e38}, {MaxComponent * 1.01, 0}, {0, -math.MaxFloat32}} {
			_, err := c.Add(AddRequest{Vector: v})
			if !errors.Is(err, ErrBadVector) || !strings.Contains(err.Error(), "1e+15") {
				t.Fatalf("%v: Add(%v) = %v, want ErrBadVector naming the limit", m, v, err)
			}
			if _, err := c.Retrieve(v, NewRetrieveOptions()); !errors.Is(err, ErrBadVector) {
				t.Fatalf("%v: Retrieve(%v) = %v, want ErrBadVector", m, v, err)
			}
		}
		if info, _ := c.Info(); info.Count != 1 {
			t.Fatalf("%v: refused adds changed the count: %d", m, info.Count)
		}
		// At the bound: accepted, and everything stays finite.
		add(t, c, 2, 1, MaxComponent, MaxComponent)
		add(t, c, 3, -1, -MaxComponent, -MaxComponent)
		res, err := c.Retrieve([]float32{MaxComponent, -MaxComponent}, NewRetrieveOptions())
		if err != nil || len(res) != 3 {
			t.Fatalf("%v: Retrieve at the bound: %v, %v", m, res, err)
		}
		checkFinite(t, m.String()+" at the bound", res)
	}
	// COSINE normalises: huge components are harmless there.
	c := mustColl(t, db, "huge-cosine", NewConfig(2))
	add(t, c, 1, 0, 3e38, 3e38)
	res, err := c.Retrieve([]float32{math.MaxFloat32, 0}, NewRetrieveOptions())
	if err != nil || len(res) != 1 || math.Abs(res[0].Sim-math.Sqrt2/2) > 1e-6 {
		t.Fatalf("COSINE with huge components: %v, %v", res, err)
	}
}

// TestBoundedComponentsAtMaxDim: the worst case the bound allows (every
// component ±MaxComponent at MaxDim, opposite signs) has a finite squared
// distance and dot product.
func TestBoundedComponentsAtMaxDim(t *testing.T) {
	db, _ := openTemp(t, Options{Sync: wal.SyncNone})
	for _, m := range []Metric{L2, IP} {
		c := mustColl(t, db, "max-"+m.String(), Config{Dim: MaxDim, Metric: m, Index: IndexConfig{Kind: IndexFlat}})
		pos, neg := make([]float32, MaxDim), make([]float32, MaxDim)
		for i := range pos {
			pos[i], neg[i] = MaxComponent, -MaxComponent
		}
		add(t, c, 1, 0, pos...)
		add(t, c, 2, 1, neg...)
		for _, q := range [][]float32{pos, neg} {
			res, err := c.Retrieve(q, NewRetrieveOptions())
			if err != nil || len(res) != 2 {
				t.Fatalf("%v: %v, %v", m, res, err)
			}
			checkFinite(t, m.String()+" at MaxDim", res)
		}
	}
}

// TestHugeComponentsThroughTheIndex: an IVF-PQ index over vectors near the
// bound (trained centroids, residuals, codebooks, per-vector L2 terms) scores
// finitely too.
func TestHugeComponentsThroughTheIndex(t *testing.T) {
	db, _ := openTemp(t, Options{Sync: wal.SyncNone})
	rng := rand.New(rand.NewSource(8))
	for _, m := range []Metric{L2, IP} {
		c := mustColl(t, db, "ix-"+m.String(), Config{Dim: 8, Metric: m,
			Index: IndexConfig{NList: 4, PQM: 2, TrainThreshold: 256}})
		for i := 0; i < 400; i++ {
			v := make([]float32, 8)
			for j := range v {
				v[j] = float32((2*rng.Float64() - 1) * MaxComponent)
			}
			if _, err := c.Add(AddRequest{Vector: v, Q: rng.NormFloat64(), HasQ: true}); err != nil {
				t.Fatal(err)
			}
		}
		waitIndexed(t, c)
		for i := 0; i < 20; i++ {
			q := make([]float32, 8)
			for j := range q {
				q[j] = float32((2*rng.Float64() - 1) * MaxComponent)
			}
			opt := NewRetrieveOptions()
			opt.K1, opt.K2 = 50, 50
			res, err := c.Retrieve(q, opt)
			if err != nil || len(res) == 0 {
				t.Fatalf("%v: %v, %v", m, res, err)
			}
			checkFinite(t, m.String()+" through the index", res)
		}
	}
}

// TestPhase2NeverNaN: phase 2 over the most extreme finite similarities and
// Q values gives finite scores.
func TestPhase2NeverNaN(t *testing.T) {
	big := float64(math.MaxFloat32)
	pool := []scored{
		{id: 1, sim: big, q: 2 * MaxValue},
		{id: 2, sim: -big, q: -2 * MaxValue},
		{id: 3, sim: big, q: 0},
		{id: 4, sim: -big, q: 2 * MaxValue},
	}
	for _, s := range rankPhase2(pool, 0.5, 4) {
		if !finite(s.score) {
			t.Fatalf("memory %d: score %v", s.id, s.score)
		}
	}
}

// TestPhase2NeverNaNOnNonFiniteSims: vectors stored before MaxComponent
// existed can still give infinite or NaN similarities; phase 2 ranks them
// (NaN as the least similar) without a NaN score.
func TestPhase2NeverNaNOnNonFiniteSims(t *testing.T) {
	pool := []scored{
		{id: 1, sim: math.Inf(1), q: 1},
		{id: 2, sim: math.Inf(-1), q: 0},
		{id: 3, sim: math.NaN(), q: 2},
		{id: 4, sim: 0.5, q: -1},
	}
	ranked := rankPhase2(pool, 0.5, 4)
	for _, s := range ranked {
		if !finite(s.score) {
			t.Fatalf("memory %d: score %v", s.id, s.score)
		}
	}
	if ranked[0].id != 1 {
		t.Fatalf("ranking %v: want the infinitely similar memory first", ranked)
	}
}
