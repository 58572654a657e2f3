package filter

import (
	"fmt"
	"io"
	"time"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/memrl/memrl/engine"
)

// band is a range of tenant sizes, as shares of the rows.
type band struct {
	lo, hi float64
	name   string
}

var bands = []band{
	{0, 0.0003, "<0.03%"},
	{0.0003, 0.001, "0.03-0.1%"},
	{0.001, 0.003, "0.1-0.3%"},
	{0.003, 0.01, "0.3-1%"},
	{0.01, 0.03, "1-3%"},
	{0.03, 1, ">=3%"},
}

// column accumulates one way of answering: recall hits and time.
type column struct {
	hit, total int
	t          time.Duration
	queries    int
}

func (c *column) add(got, want []uint32, d time.Duration) {
	c.hit += hits(got, want)
	c.total += len(want)
	c.t += d
	c.queries++
}

func (c *column) recall() float64 { return float64(c.hit) / float64(max(c.total, 1)) }
func (c *column) qps() float64    { return float64(c.queries) / c.t.Seconds() }

// tenantsTable assigns tenants and kinds, and measures each band.
func (b *bench) tenantsTable(w io.Writer) error {
	cfg := b.cfg
	n := len(b.base) / b.dim
	k := cfg.k
	rng := b.seeded(3)
	shares := tenantShares(cfg.tenants)
	if cfg.tenants > 1<<16 || cfg.kinds > 1<<8 {
		return fmt.Errorf("at most %d tenants and %d kinds", 1<<16, 1<<8)
	}
	a := assign(rng, n, cfg.tenants, cfg.kinds)
	tenant, kindOf := a.tenant, a.kindOf
	kind := make([]*roaring.Bitmap, cfg.kinds)
	for i := range kind {
		kind[i] = roaring.New()
	}
	for r, kv := range kindOf {
		kind[kv].Add(uint32(r))
	}
	var bitmapBytes uint64
	for _, bm := range append(append([]*roaring.Bitmap{}, tenant...), kind...) {
		bm.RunOptimize()
		bitmapBytes += bm.GetSizeInBytes()
	}
	fmt.Fprintf(w, "tenants: %d, largest %d rows (%.2f%%), smallest %d (%.3f%%); kinds: %d\n",
		cfg.tenants, tenant[0].GetCardinality(), 100*float64(tenant[0].GetCardinality())/float64(n),
		tenant[cfg.tenants-1].GetCardinality(), 100*float64(tenant[cfg.tenants-1].GetCardinality())/float64(n), cfg.kinds)
	fmt.Fprintf(w, "bitmaps: %d tenant + %d kind bitmaps, %.2f MB serialized (%.2f bytes per row)\n",
		cfg.tenants, cfg.kinds, float64(bitmapBytes)/1e6, float64(bitmapBytes)/float64(n))

	nextQuery := b.queryCycle()
	fmt.Fprintf(w, "\nrecall@%d against exact filtered ground truth; QPS one query at a time on one goroutine\n", k)
	fmt.Fprintf(w, "%-10s %7s %15s | %14s | %14s | %14s | %14s | %14s\n", "band", "tenants", "rows/tenant",
		"filtered", "tenant+kind", "post K1=10", "post K1=100", "unfiltered")
	fmt.Fprintf(w, "%-10s %7s %15s | %6s %7s | %6s %7s | %6s %7s | %6s %7s | %6s %7s\n", "", "", "",
		"R", "QPS", "R", "QPS", "R", "QPS", "R", "QPS", "R", "QPS")
	for _, bd := range bands {
		members := bandMembers(shares, bd) // attrs.go
		if len(members) == 0 {
			continue
		}
		lo, hi := tenant[members[len(members)-1]].GetCardinality(), tenant[members[0]].GetCardinality()
		var filt, both, post10, post100, unf column
		for range cfg.nq {
			q := nextQuery()
			t := members[rng.Intn(len(members))]
			allow := tenant[t]
			kv := uint8(rng.Intn(cfg.kinds))
			match := func(row uint32) bool { return kindOf[row] == kv }

			truth := b.exactTop(q, k, allow, nil)
			t0 := time.Now()
			got, err := b.retrieve(q, k, engine.SearchOptions{Allow: allow})
			if err != nil {
				return err
			}
			filt.add(got, truth, time.Since(t0))

			// tenant == t (indexed: the bitmap) and kind == v (residual:
			// Match), the way a non-indexed field is evaluated.
			truthBoth := b.exactTop(q, k, allow, match)
			t0 = time.Now()
			got, err = b.retrieve(q, k, engine.SearchOptions{Allow: allow, Match: match})
			if err != nil {
				return err
			}
			both.add(got, truthBoth, time.Since(t0))

			for _, pc := range []struct {
				k1  int
				col *column
			}{{k, &post10}, {10 * k, &post100}} {
				t0 = time.Now()
				got, err = b.retrieve(q, pc.k1, engine.SearchOptions{})
				if err != nil {
					return err
				}
				kept := got[:0]
				for _, r := range got {
					if allow.Contains(r) && len(kept) < k {
						kept = append(kept, r)
					}
				}
				pc.col.add(kept, truth, time.Since(t0))
			}

			truthAll := b.exactTop(q, k, nil, nil)
			t0 = time.Now()
			got, err = b.retrieve(q, k, engine.SearchOptions{})
			if err != nil {
				return err
			}
			unf.add(got, truthAll, time.Since(t0))
		}
		fmt.Fprintf(w, "%-10s %7d %15s | %6.3f %7.0f | %6.3f %7.0f | %6.3f %7.0f | %6.3f %7.0f | %6.3f %7.0f\n",
			bd.name, len(members), fmt.Sprintf("%d-%d", lo, hi),
			filt.recall(), filt.qps(), both.recall(), both.qps(), post10.recall(), post10.qps(),
			post100.recall(), post100.qps(), unf.recall(), unf.qps())
	}
	fmt.Fprintln(w)
	return b.widening(w)
}

// widening measures the two unfiltered cases widening serves: a K1 larger
// than the default probes' lists hold, and a DELTA that no memory passes
// (every list is then probed: the bound of a widened search).
func (b *bench) widening(w io.Writer) error {
	nq := min(b.cfg.nq, 20)
	for _, tc := range []struct {
		name string
		opt  engine.SearchOptions
	}{
		{"K1 10000", engine.SearchOptions{K1: engine.MaxK}},
		{"DELTA 0 (L2: nothing passes)", engine.SearchOptions{K1: 10, HasDelta: true}},
	} {
		var d time.Duration
		minGot, maxGot := int(^uint(0)>>1), 0
		for i := range nq {
			q := b.queries[i*b.dim : (i+1)*b.dim]
			t0 := time.Now()
			got, err := b.retrieve(q, tc.opt.K1, tc.opt)
			if err != nil {
				return err
			}
			d += time.Since(t0)
			minGot, maxGot = min(minGot, len(got)), max(maxGot, len(got))
		}
		fmt.Fprintf(w, "%s: %d-%d candidates, %.1f ms per query (%d queries)\n", tc.name, minGot, maxGot,
			float64(d.Microseconds())/1000/float64(nq), nq)
	}
	return nil
}

// queryCycle returns a function giving the benchmark's queries one after
// another, starting again after the last.
func (b *bench) queryCycle() func() []float32 {
	nq, i := len(b.queries)/b.dim, 0
	return func() []float32 {
		q := b.queries[(i%nq)*b.dim : (i%nq+1)*b.dim]
		i++
		return q
	}
}
