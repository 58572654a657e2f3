package filter

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/memrl/memrl/engine"
	efilter "github.com/memrl/memrl/engine/filter"
)

// The attribute mode (--attrs): the same tenants and kinds as the bitmap
// mode, stored as each memory's attributes {"tenant":"t17","kind":"k2"} in
// a collection created with INDEXED tenant,kind, and queried through
// Collection.Retrieve with RetrieveOptions.Filter: the path a MEM.RETRIEVE …
// FILTER takes, attribute index and all. Then the indexed fields are
// dropped and a few queries per band run again, the filter evaluated on
// each candidate's attributes (the widening path).

// indexedFields are the fields the attribute mode indexes.
var indexedFields = []string{"tenant", "kind"}

// addBatch is the number of memories of one AddBatch while loading.
const addBatch = 10_000

// fillAttrs creates the attribute collection and adds the base vectors in
// order, with their attributes, in batches.
func (b *bench) fillAttrs(db *engine.DB, n int) error {
	ecfg := engine.NewConfig(b.dim)
	ecfg.Metric = engine.L2
	ecfg.Index.TrainThreshold = n
	ecfg.Indexed = indexedFields
	if err := db.Create(b.name, ecfg); err != nil {
		return err
	}
	var err error
	if b.c, err = db.Collection(b.name); err != nil {
		return err
	}
	start := time.Now()
	reqs := make([]engine.AddRequest, 0, addBatch)
	for lo := 0; lo < n; lo += addBatch {
		reqs = reqs[:0]
		for r := lo; r < min(lo+addBatch, n); r++ {
			reqs = append(reqs, engine.AddRequest{Vector: b.base[r*b.dim : (r+1)*b.dim], Attrs: b.asg.attrsOf(r)})
		}
		ids, err := b.c.AddBatch(reqs)
		if err != nil {
			return err
		}
		// Row r holds id r+1 in a new collection (see fill); checked.
		if ids[0] != uint64(lo)+1 || ids[len(ids)-1] != uint64(lo+len(reqs)) {
			return fmt.Errorf("batch at row %d got ids %d..%d; the benchmark needs id = row+1", lo, ids[0], ids[len(ids)-1])
		}
	}
	fmt.Fprintf(b.w, "added %d memories with attributes in batches of %d in %v\n", n, addBatch, time.Since(start).Round(time.Millisecond))
	return nil
}

// checkReused makes sure a reused attribute collection indexes tenant and
// kind (an interrupted run may have left them dropped) and holds this
// run's assignment, by counting two tenants and one kind through FILTER.
func (b *bench) checkReused() error {
	have, err := b.c.IndexedFields()
	if err != nil {
		return err
	}
	for _, f := range indexedFields {
		if !slices.Contains(have, f) {
			if err := b.c.IndexField(f, true); err != nil {
				return err
			}
		}
	}
	last := len(b.asg.tenant) - 1
	for _, tc := range []struct {
		expr string
		want uint64
	}{
		{`.tenant == "t0"`, b.asg.tenant[0].GetCardinality()},
		{fmt.Sprintf(`.tenant == "t%d"`, last), b.asg.tenant[last].GetCardinality()},
	} {
		e, err := efilter.Parse(tc.expr)
		if err != nil {
			return err
		}
		got, err := b.c.CountFilter(e)
		if err != nil {
			return err
		}
		if uint64(got) != tc.want {
			return fmt.Errorf("reused collection: %s counts %d, this run assigns %d; use another --dir or the same --seed/--tenants", tc.expr, got, tc.want)
		}
	}
	return nil
}

// tenantExpr and bothExpr are the attribute mode's two filters.
func tenantExpr(t int) string { return fmt.Sprintf(`.tenant == "t%d"`, t) }
func bothExpr(t, kv int) string {
	return fmt.Sprintf(`.tenant == "t%d" and .kind == "k%d"`, t, kv)
}

// retrieveExpr parses src and runs one retrieval filtered by it, phase 1's
// top k by similarity, returning their rows; the parse is part of what a
// query costs, so callers time both.
func (b *bench) retrieveExpr(q []float32, k int, src string) ([]uint32, error) {
	e, err := efilter.Parse(src)
	if err != nil {
		return nil, err
	}
	opt := engine.NewRetrieveOptions()
	opt.K1, opt.K2, opt.Lambda = k, k, 0
	opt.Filter = e
	res, err := b.c.Retrieve(q, opt)
	if err != nil {
		return nil, err
	}
	rows := make([]uint32, len(res))
	for i, r := range res {
		rows[i] = uint32(r.ID - 1)
	}
	return rows, nil
}

// postFilter is what a client without FILTER does: the global top k1 with
// their attributes, then its own test of each, keeping the first k that
// match.
func (b *bench) postFilter(q []float32, k1, k int, e *efilter.Expr) ([]uint32, error) {
	opt := engine.NewRetrieveOptions()
	opt.K1, opt.K2, opt.Lambda = k1, k1, 0
	opt.WithAttrs = true
	res, err := b.c.Retrieve(q, opt)
	if err != nil {
		return nil, err
	}
	var rows []uint32
	for _, r := range res {
		if len(rows) < k && e.Match(r.Attrs) {
			rows = append(rows, uint32(r.ID-1))
		}
	}
	return rows, nil
}

// bandMembers returns the tenants of bd, largest first.
func bandMembers(shares []float64, bd band) []int {
	var members []int
	for t, s := range shares {
		if s >= bd.lo && s < bd.hi {
			members = append(members, t)
		}
	}
	return members
}

// attrsTable measures each band through FILTER with the fields indexed,
// then again with them dropped, then indexes them again.
func (b *bench) attrsTable(w io.Writer) error {
	cfg := b.cfg
	k := cfg.k
	rng := b.seeded(4)
	shares := tenantShares(cfg.tenants)
	a := b.asg
	am, err := b.c.AttrMemory()
	if err != nil {
		return err
	}
	n := len(b.base) / b.dim
	fmt.Fprintf(w, "attributes: %d memories carry them, %.2f MB of JSON (%.1f bytes per memory)\n",
		am.Memories, float64(am.AttrBytes)/1e6, float64(am.AttrBytes)/float64(max(am.Memories, 1)))
	fmt.Fprintf(w, "attribute index (INDEXED %v): %.2f MB (%.2f bytes per memory), Collection.AttrMemory\n",
		indexedFields, float64(am.IndexBytes)/1e6, float64(am.IndexBytes)/float64(n))

	nextQuery := b.queryCycle() // tenants.go
	fmt.Fprintf(w, "\nINDEXED tenant,kind; FILTER through Collection.Retrieve; recall@%d against exact filtered ground truth; QPS one query at a time on one goroutine\n", k)
	fmt.Fprintf(w, "%-10s %7s %15s | %14s | %14s | %14s | %14s | %14s\n", "band", "tenants", "rows/tenant",
		"tenant", "tenant+kind", "post K1=10", "post K1=100", "unfiltered")
	fmt.Fprintf(w, "%-10s %7s %15s | %6s %7s | %6s %7s | %6s %7s | %6s %7s | %6s %7s\n", "", "", "",
		"R", "QPS", "R", "QPS", "R", "QPS", "R", "QPS", "R", "QPS")
	for _, bd := range bands {
		members := bandMembers(shares, bd)
		if len(members) == 0 {
			continue
		}
		lo, hi := a.tenant[members[len(members)-1]].GetCardinality(), a.tenant[members[0]].GetCardinality()
		var filt, both, post10, post100, unf column
		for range cfg.nq {
			q := nextQuery()
			t := members[rng.Intn(len(members))]
			kv := rng.Intn(cfg.kinds)
			allow := a.tenant[t]
			match := func(row uint32) bool { return int(a.kindOf[row]) == kv }

			truth := b.exactTop(q, k, allow, nil)
			t0 := time.Now()
			got, err := b.retrieveExpr(q, k, tenantExpr(t))
			if err != nil {
				return err
			}
			filt.add(got, truth, time.Since(t0))

			truthBoth := b.exactTop(q, k, allow, match)
			t0 = time.Now()
			if got, err = b.retrieveExpr(q, k, bothExpr(t, kv)); err != nil {
				return err
			}
			both.add(got, truthBoth, time.Since(t0))

			for _, pc := range []struct {
				k1  int
				col *column
			}{{k, &post10}, {10 * k, &post100}} {
				t0 = time.Now()
				e, err := efilter.Parse(tenantExpr(t))
				if err != nil {
					return err
				}
				if got, err = b.postFilter(q, pc.k1, k, e); err != nil {
					return err
				}
				pc.col.add(got, truth, time.Since(t0))
			}

			truthAll := b.exactTop(q, k, nil, nil)
			t0 = time.Now()
			if got, err = b.retrieve(q, k, engine.SearchOptions{}); err != nil {
				return err
			}
			unf.add(got, truthAll, time.Since(t0))
		}
		fmt.Fprintf(w, "%-10s %7d %15s | %6.3f %7.0f | %6.3f %7.0f | %6.3f %7.0f | %6.3f %7.0f | %6.3f %7.0f\n",
			bd.name, len(members), fmt.Sprintf("%d-%d", lo, hi),
			filt.recall(), filt.qps(), both.recall(), both.qps(), post10.recall(), post10.qps(),
			post100.recall(), post100.qps(), unf.recall(), unf.qps())
	}
	return b.unindexedTable(w, nextQuery)
}

// unindexedTable drops the indexed fields, measures the same filters on
// each candidate's attributes (the widening path), and indexes the fields
// again (timed: what MEM.INDEX ADD costs at this size).
func (b *bench) unindexedTable(w io.Writer, nextQuery func() []float32) error {
	cfg := b.cfg
	k := cfg.k
	rng := b.seeded(5)
	shares := tenantShares(cfg.tenants)
	a := b.asg
	for _, f := range indexedFields {
		if err := b.c.IndexField(f, false); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "\nno indexed fields (FILTER evaluated on each candidate's attributes, widening until K1 match); %d queries per band\n", cfg.nqUnidx)
	fmt.Fprintf(w, "%-10s | %14s | %14s\n", "band", "tenant", "tenant+kind")
	fmt.Fprintf(w, "%-10s | %6s %7s | %6s %7s\n", "", "R", "QPS", "R", "QPS")
	for _, bd := range bands {
		members := bandMembers(shares, bd)
		if len(members) == 0 || cfg.nqUnidx <= 0 {
			continue
		}
		var filt, both column
		for range cfg.nqUnidx {
			q := nextQuery()
			t := members[rng.Intn(len(members))]
			kv := rng.Intn(cfg.kinds)
			allow := a.tenant[t]
			truth := b.exactTop(q, k, allow, nil)
			t0 := time.Now()
			got, err := b.retrieveExpr(q, k, tenantExpr(t))
			if err != nil {
				return err
			}
			filt.add(got, truth, time.Since(t0))
			truthBoth := b.exactTop(q, k, allow, func(row uint32) bool { return int(a.kindOf[row]) == kv })
			t0 = time.Now()
			if got, err = b.retrieveExpr(q, k, bothExpr(t, kv)); err != nil {
				return err
			}
			both.add(got, truthBoth, time.Since(t0))
		}
		fmt.Fprintf(w, "%-10s | %6.3f %7.0f | %6.3f %7.0f\n", bd.name, filt.recall(), filt.qps(), both.recall(), both.qps())
	}
	start := time.Now()
	for _, f := range indexedFields {
		if err := b.c.IndexField(f, true); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "indexed tenant and kind again (MEM.INDEX ADD) in %v\n\n", time.Since(start).Round(time.Millisecond))
	return nil
}

// warm runs one exact scan of every row before the measurements, so that
// every run starts with the vector file's pages mapped (they are read
// through mmap, and the first read of a page faults) and no band pays for
// what an earlier one did not touch. Measured at 1M on a reused folder it
// made no visible difference (first scan 75 and 107 ms, second 71 and 102
// ms; the fresh-load case was not measured with it); it was added when the first
// run's tenant column looked slow, most likely load plus the
// tenant+kind query reading a fifth of the same rows from cache (runs 2
// and 3 were in line with the bitmap mode at their load).
func (b *bench) warm(w io.Writer) error {
	q := b.queries[:b.dim]
	t0 := time.Now()
	if _, err := b.retrieve(q, b.cfg.k, engine.SearchOptions{Path: engine.PathExact}); err != nil {
		return err
	}
	t1 := time.Now()
	if _, err := b.retrieve(q, b.cfg.k, engine.SearchOptions{Path: engine.PathExact}); err != nil {
		return err
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	fmt.Fprintf(w, "warm-up: a full exact scan took %.1f ms the first time (faulting in the vector file's pages), %.1f ms the second\n",
		ms(t1.Sub(t0)), ms(time.Since(t1)))
	return nil
}
