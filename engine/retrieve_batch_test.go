package engine

import (
	"context"
	"errors"
	"math"
	"math/rand"
	"slices"
	"testing"

	"github.com/memrl/memrl/wal"
)

// batchFixture is a DIM 32 L2 collection of 3,000 clustered memories with
// random Q, indexed (IVF16) when indexed is set, and 200 queries from the
// same clusters.
func batchFixture(t *testing.T, indexed bool) (*Collection, [][]float32) {
	t.Helper()
	db, _ := openTemp(t, Options{Sync: wal.SyncNone, CheckpointInterval: -1})
	cfg := Config{Dim: 32, Metric: L2, Alpha: 0.3}
	if indexed {
		cfg.Index = IndexConfig{NList: 16, TrainThreshold: 2000}
	} else {
		cfg.Index = IndexConfig{Kind: IndexFlat}
	}
	c := mustColl(t, db, "b", cfg)
	rng := rand.New(rand.NewSource(29))
	for _, v := range clustered(rng, 3000, 32) {
		if _, err := c.Add(AddRequest{Vector: v, Q: rng.Float64(), HasQ: true}); err != nil {
			t.Fatal(err)
		}
	}
	if indexed {
		waitIndexed(t, c)
	}
	// Some deletions, so that the tombstones are consulted.
	var del []uint64
	for id := uint64(1); id <= 3000; id += 11 {
		del = append(del, id)
	}
	if _, err := c.Delete(del); err != nil {
		t.Fatal(err)
	}
	return c, clustered(rng, 200, 32)
}

// TestRetrieveBatchMatchesRetrieve: every query's results from
// RetrieveBatch are exactly Retrieve's (ids, similarities, Q and scores,
// in order), on an indexed and on a flat collection, on one goroutine and
// on several, with and without a non-default NPROBE.
func TestRetrieveBatchMatchesRetrieve(t *testing.T) {
	for _, indexed := range []bool{true, false} {
		c, qs := batchFixture(t, indexed)
		// A DELTA about the median 20th neighbour's similarity: many
		// queries have fewer than K1 rows above it, and widen.
		opt := NewRetrieveOptions()
		opt.K1 = 20
		r, err := c.Retrieve(qs[0], opt)
		if err != nil {
			t.Fatal(err)
		}
		delta := r[len(r)-1].Sim
		for _, v := range []struct {
			nprobe int
			delta  bool
		}{{0, false}, {3, false}, {0, true}} {
			nprobe := v.nprobe
			opt := NewRetrieveOptions()
			opt.K1, opt.K2, opt.NProbe = 20, 8, nprobe
			opt.Delta, opt.HasDelta = delta, v.delta
			opt.WithPayload = true
			for _, threads := range []int{1, 3} {
				got, err := c.RetrieveBatch(context.Background(), qs, opt, threads)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != len(qs) {
					t.Fatalf("%d result lists for %d queries", len(got), len(qs))
				}
				for i, q := range qs {
					want, err := c.Retrieve(q, opt)
					if err != nil {
						t.Fatal(err)
					}
					if !slices.EqualFunc(got[i], want, sameResult) {
						t.Fatalf("indexed %v, %+v, threads %d, query %d:\n batch  %v\n single %v", indexed, v, threads, i, got[i], want)
					}
				}
			}
		}
	}
}

// TestRetrieveBatchCosineNormalisesOnce: in a COSINE collection answered
// one query at a time (flat, or PathExact), each query of a batch is
// normalised once, as Retrieve normalises it: normalising twice moved the
// last bit of similarities (FuzzMemArgs' seed 1ce561854b85003a), so the
// results are compared bit for bit over queries far from unit length.
func TestRetrieveBatchCosineNormalisesOnce(t *testing.T) {
	db, _ := openTemp(t, Options{Sync: wal.SyncNone, CheckpointInterval: -1})
	c := mustColl(t, db, "cos", Config{Dim: 4, Metric: Cosine, Index: IndexConfig{Kind: IndexFlat}})
	for _, v := range [][]float32{{1, 0, 0, 0}, {0, 1, 0, 0}, {1, 1, 1, 1}, {-2, 0.5, 3, 1}} {
		if _, err := c.Add(AddRequest{Vector: v}); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewSource(31))
	qs := [][]float32{{0.66, 1.0015, 0.563, 0.864}}
	for range 300 {
		q := make([]float32, 4)
		for j := range q {
			q[j] = float32(rng.NormFloat64() * math.Pow(10, rng.Float64()*4-2))
		}
		qs = append(qs, q)
	}
	opt := NewRetrieveOptions()
	opt.K1, opt.K2 = 4, 4
	for _, exact := range []bool{false, true} {
		o := opt
		if exact {
			o.Path = PathExact
		}
		got, err := c.RetrieveBatch(context.Background(), qs, o, 2)
		if err != nil {
			t.Fatal(err)
		}
		for i, q := range qs {
			want, err := c.Retrieve(q, o)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(got[i], want, sameResult) {
				t.Fatalf("PathExact %v, query %d %v:\n batch  %v\n single %v", exact, i, q, got[i], want)
			}
		}
	}
}

func sameResult(a, b Result) bool {
	return a.ID == b.ID && a.Sim == b.Sim && a.Q == b.Q && a.Score == b.Score && a.Key == b.Key && a.PayloadLen == b.PayloadLen
}

// TestRetrieveBatchBadQuery: a query of the wrong dimension or with a NaN
// fails the whole batch with an error naming it; an empty batch returns an
// empty result; a done context fails.
func TestRetrieveBatchBadQuery(t *testing.T) {
	c, qs := batchFixture(t, false)
	opt := NewRetrieveOptions()
	bad := slices.Clone(qs[:3])
	bad[2] = bad[2][:31]
	if _, err := c.RetrieveBatch(context.Background(), bad, opt, 2); !errors.Is(err, ErrDimension) {
		t.Fatalf("short query: %v, want ErrDimension", err)
	}
	nan := slices.Clone(qs[:3])
	nan[1] = slices.Clone(nan[1])
	nan[1][5] = float32(math.NaN())
	if _, err := c.RetrieveBatch(context.Background(), nan, opt, 1); !errors.Is(err, ErrBadVector) {
		t.Fatalf("NaN query: %v, want ErrBadVector", err)
	}
	res, err := c.RetrieveBatch(context.Background(), nil, opt, 2)
	if err != nil || len(res) != 0 {
		t.Fatalf("empty batch: %v, %v", res, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.RetrieveBatch(ctx, qs, opt, 2); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v, want context.Canceled", err)
	}
	opt.K1 = 0
	if _, err := c.RetrieveBatch(context.Background(), qs, opt, 2); !errors.Is(err, ErrBadParam) {
		t.Fatalf("K1 0: %v, want ErrBadParam", err)
	}
}

// TestRetrieveBatchConcurrentAdds: batches on two workers while another
// goroutine adds and deletes memories (run with -race): every batch
// answers every query, with K2 results each.
func TestRetrieveBatchConcurrentAdds(t *testing.T) {
	c, qs := batchFixture(t, true)
	done := make(chan error, 1)
	go func() {
		rng := rand.New(rand.NewSource(5))
		for i, v := range clustered(rng, 300, 32) {
			id, err := c.Add(AddRequest{Vector: v})
			if err == nil && i%3 == 0 {
				_, err = c.Delete([]uint64{id})
			}
			if err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	opt := NewRetrieveOptions()
	for round := 0; ; round++ {
		res, err := c.RetrieveBatch(context.Background(), qs, opt, 2)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range res {
			if len(r) != opt.K2 {
				t.Fatalf("round %d query %d: %d results, want %d", round, i, len(r), opt.K2)
			}
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			return
		default:
		}
	}
}
