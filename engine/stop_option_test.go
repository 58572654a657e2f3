package engine

import (
	"errors"
	"math"
	"math/rand"
	"testing"

	"github.com/memrl/memrl/vfs"
	"github.com/memrl/memrl/wal"
)

// TestRetrieveStop: Stop reaches the index (factors in (0, 1]
// retrieve from an indexed collection, 0 being the default) and a factor
// outside (0, 1], NaN included, is ErrBadParam, refused before any search,
// as is a positive factor that float32 would round to 0 (the default).
func TestRetrieveStop(t *testing.T) {
	db, _ := openTemp(t, Options{FS: vfs.NewMemFS(), Sync: wal.SyncNone, CheckpointInterval: -1})
	cfg := NewConfig(8)
	cfg.Metric = L2
	cfg.Index = IndexConfig{NList: 16, PQBits: 4, TrainThreshold: 400}
	c := mustColl(t, db, "c", cfg)
	rng := rand.New(rand.NewSource(2))
	vecs := clustered(rng, 1200, 8)
	for _, v := range vecs {
		if _, err := c.Add(AddRequest{Vector: v}); err != nil {
			t.Fatal(err)
		}
	}
	waitIndexed(t, c)
	for _, f := range []float64{0, 1, 0.5, 0.05, math.SmallestNonzeroFloat32} {
		opt := NewRetrieveOptions()
		opt.Lambda, opt.K2, opt.Stop, opt.NProbe, opt.Path = 0, 1, f, 16, PathIndex
		res, err := c.Retrieve(vecs[7], opt)
		if err != nil || len(res) != 1 || res[0].Sim != 0 {
			t.Fatalf("Stop %v: %+v, %v; want the query's own memory at similarity 0", f, res, err)
		}
	}
	for _, f := range []float64{math.NaN(), -0.1, 1.01, math.Inf(1), 1e-50, math.SmallestNonzeroFloat64} {
		opt := NewRetrieveOptions()
		opt.Stop = f
		if _, err := c.Retrieve(vecs[0], opt); !errors.Is(err, ErrBadParam) {
			t.Fatalf("Stop %v: err %v, want ErrBadParam", f, err)
		}
	}
}
