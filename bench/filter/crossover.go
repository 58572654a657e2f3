package filter

import (
	"fmt"
	"io"
	"time"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/memrl/memrl/engine"
)

// crossover times the exact path against the index path for uniformly
// random allowed sets from 0.05% to 20% of the rows, nq queries each, and
// the automatic choice beside them. The exact path is the ground truth.
func (b *bench) crossover(w io.Writer) error {
	n := len(b.base) / b.dim
	k := b.cfg.k
	rng := b.seeded(2)
	// The batched full scan, for the flat path's rule (iterateAllowed).
	var tFull time.Duration
	for i := range b.cfg.nq {
		q := b.queries[i*b.dim : (i+1)*b.dim]
		t0 := time.Now()
		if _, err := b.retrieve(q, k, engine.SearchOptions{Path: engine.PathExact}); err != nil {
			return err
		}
		tFull += time.Since(t0)
	}
	fmt.Fprintf(w, "full exact scan of %d rows: %.0f us per query\n", n, float64(tFull.Microseconds())/float64(b.cfg.nq))
	fmt.Fprintf(w, "\n%-9s %9s %12s %12s %9s %12s %9s\n", "allowed", "rows", "exact_us", "index_us", "index_R", "auto_us", "auto_R")
	for _, sel := range []float64{0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2} {
		allow := roaring.New()
		for r := range n {
			if rng.Float64() < sel {
				allow.Add(uint32(r))
			}
		}
		allow.RunOptimize()
		var tExact, tIndex, tAuto time.Duration
		hIndex, hAuto, total := 0, 0, 0
		for i := range b.cfg.nq {
			qi := (i*7 + int(sel*1e4)) % (len(b.queries) / b.dim)
			q := b.queries[qi*b.dim : (qi+1)*b.dim]
			t0 := time.Now()
			truth, err := b.retrieve(q, k, engine.SearchOptions{Allow: allow, Path: engine.PathExact})
			if err != nil {
				return err
			}
			t1 := time.Now()
			idx, err := b.retrieve(q, k, engine.SearchOptions{Allow: allow, Path: engine.PathIndex})
			if err != nil {
				return err
			}
			t2 := time.Now()
			auto, err := b.retrieve(q, k, engine.SearchOptions{Allow: allow})
			if err != nil {
				return err
			}
			t3 := time.Now()
			tExact += t1.Sub(t0)
			tIndex += t2.Sub(t1)
			tAuto += t3.Sub(t2)
			hIndex += hits(idx, truth)
			hAuto += hits(auto, truth)
			total += len(truth)
		}
		us := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.cfg.nq) }
		fmt.Fprintf(w, "%8.2f%% %9d %12.0f %12.0f %9.3f %12.0f %9.3f\n", 100*sel, allow.GetCardinality(),
			us(tExact), us(tIndex), float64(hIndex)/float64(max(total, 1)), us(tAuto), float64(hAuto)/float64(max(total, 1)))
	}
	return nil
}
