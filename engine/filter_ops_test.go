package engine

import (
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/memrl/memrl/engine/filter"
	"github.com/memrl/memrl/vfs"
	"github.com/memrl/memrl/wal"
)

// filterWorld is a database with two collections holding the same
// memories: "ix" indexes the attribute fields tenant and kind, "plain"
// indexes none, so every filter runs through the bitmaps in one and
// through per-memory evaluation in the other, and both must agree with
// brute force.
type filterWorld struct {
	t     *testing.T
	fs    *vfs.MemFS
	db    *DB
	attrs map[uint64][]byte // id -> attributes, the model
	vecs  map[uint64][]float32
}

const filterDim = 8

func openFilterWorld(t *testing.T, fs *vfs.MemFS) *filterWorld {
	t.Helper()
	db, err := Open("/db", crashOpts(fs))
	if err != nil {
		t.Fatal(err)
	}
	return &filterWorld{t: t, fs: fs, db: db, attrs: map[uint64][]byte{}, vecs: map[uint64][]float32{}}
}

func (w *filterWorld) coll(name string) *Collection {
	w.t.Helper()
	c, err := w.db.Collection(name)
	if err != nil {
		w.t.Fatal(err)
	}
	return c
}

func (w *filterWorld) reopen() {
	w.t.Helper()
	if err := w.db.Close(); err != nil {
		w.t.Fatal(err)
	}
	db, err := Open("/db", crashOpts(w.fs))
	if err != nil {
		w.t.Fatal(err)
	}
	w.db = db
}

// randomAttrs makes attributes like a front end's: a tenant of very
// unequal sizes, a kind, a step, tags; some memories have none.
func randomAttrs(rng *rand.Rand) []byte {
	if rng.Intn(10) == 0 {
		return nil
	}
	tenant := fmt.Sprintf("t%d", int(rng.ExpFloat64()*3)) // t0 large, t9 rare
	tags := `["plan"]`
	if rng.Intn(2) == 0 {
		tags = `["reflect","plan"]`
	} else if rng.Intn(3) == 0 {
		tags = `[]`
	}
	if rng.Intn(8) == 0 {
		return []byte(fmt.Sprintf(`{"tenant":%q,"step":"many"}`, tenant)) // step of another type
	}
	return []byte(fmt.Sprintf(`{"tenant":%q,"kind":"k%d","step":%d,"tags":%s}`, tenant, rng.Intn(5), rng.Intn(20), tags))
}

func (w *filterWorld) add(rng *rand.Rand, n int) {
	w.t.Helper()
	for range n {
		v := make([]float32, filterDim)
		for i := range v {
			v[i] = rng.Float32()
		}
		a := randomAttrs(rng)
		var id uint64
		for _, name := range []string{"ix", "plain"} {
			got, err := w.coll(name).Add(AddRequest{Vector: v, Attrs: a})
			if err != nil {
				w.t.Fatal(err)
			}
			if id != 0 && got != id {
				w.t.Fatalf("ids diverge: %d and %d", id, got)
			}
			id = got
		}
		w.attrs[id], w.vecs[id] = a, v
	}
}

// want returns the ids whose attributes match e, sorted.
func (w *filterWorld) want(e *filter.Expr) []uint64 {
	var ids []uint64
	for id, a := range w.attrs {
		if e.Match(a) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// check compares CountFilter, a filtered scan and a filtered retrieval of
// both collections with brute force, for each expression.
func (w *filterWorld) check(exprs []string, rng *rand.Rand) {
	w.t.Helper()
	for _, src := range exprs {
		e, err := filter.Parse(src)
		if err != nil {
			w.t.Fatalf("%s: %v", src, err)
		}
		want := w.want(e)
		for _, name := range []string{"ix", "plain"} {
			c := w.coll(name)
			if n, err := c.CountFilter(e); err != nil || n != len(want) {
				w.t.Fatalf("%s: CountFilter(%s) = %d, %v; want %d", name, src, n, err, len(want))
			}
			var scanned []uint64
			for cursor := uint64(0); ; {
				page, next, err := c.Scan(cursor, ScanOptions{Count: 7, Filter: e})
				if err != nil {
					w.t.Fatal(err)
				}
				for _, mi := range page {
					scanned = append(scanned, mi.ID)
				}
				if next == 0 {
					break
				}
				cursor = next
			}
			if !slices.Equal(scanned, want) {
				w.t.Fatalf("%s: filtered scan of %s = %v, want %v", name, src, scanned, want)
			}
			// Exact phase 1 (FLAT): the K1 nearest matching memories.
			q := w.vecs[want0(want, w.vecs)]
			opt := NewRetrieveOptions()
			opt.K1, opt.K2, opt.Lambda, opt.Filter = 10, 10, 0, e
			res, err := c.Retrieve(q, opt)
			if err != nil {
				w.t.Fatal(err)
			}
			nearest := w.nearest(q, want, 10)
			got := make([]uint64, len(res))
			for i, r := range res {
				got[i] = r.ID
			}
			slices.Sort(got)
			if !slices.Equal(got, nearest) {
				w.t.Fatalf("%s: retrieval filtered by %s = %v, want %v", name, src, got, nearest)
			}
		}
		_ = rng
	}
}

func want0(ids []uint64, vecs map[uint64][]float32) uint64 {
	if len(ids) > 0 {
		return ids[0]
	}
	for id := range vecs {
		return id
	}
	return 0
}

// nearest returns the k ids of among closest to q (L2), sorted by id.
func (w *filterWorld) nearest(q []float32, among []uint64, k int) []uint64 {
	type d struct {
		id   uint64
		dist float64
	}
	ds := make([]d, len(among))
	for i, id := range among {
		var s float64
		for j, x := range w.vecs[id] {
			s += float64(x-q[j]) * float64(x-q[j])
		}
		ds[i] = d{id, s}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i].dist < ds[j].dist || ds[i].dist == ds[j].dist && ds[i].id < ds[j].id })
	out := []uint64{}
	for i := 0; i < len(ds) && i < k; i++ {
		out = append(out, ds[i].id)
	}
	slices.Sort(out)
	return out
}

var filterExprs = []string{
	`.tenant == "t0"`,
	`.tenant == "t5"`, // a small tenant
	`.tenant == "t0" and .kind == "k1"`,
	`.tenant in ["t2", "t3"] and not (.kind == "k0")`,
	`.step >= 10 and "reflect" in .tags`,
	`.kind == "k2" or .step < 3`,
	`.tenant == "nobody"`,
	`not (.tenant == "t0")`,
}

// TestFilterCommandsAgainstBruteForce: counts, scans, retrievals and
// deletes by filter agree with brute force, with the indexed fields'
// bitmaps and without, as attributes change, fields are indexed and
// dropped, and after a restart from the log and from a checkpoint.
func TestFilterCommandsAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	w := openFilterWorld(t, vfs.NewMemFS())
	cfg := NewConfig(filterDim)
	cfg.Metric = L2
	plain := cfg
	cfg.Indexed = []string{"tenant", "kind"}
	if err := w.db.Create("ix", cfg); err != nil {
		t.Fatal(err)
	}
	if err := w.db.Create("plain", plain); err != nil {
		t.Fatal(err)
	}
	w.add(rng, 600)
	w.check(filterExprs, rng)

	// Attributes change: the bitmaps follow.
	for id := range w.attrs {
		if rng.Intn(4) != 0 {
			continue
		}
		a := randomAttrs(rng)
		for _, name := range []string{"ix", "plain"} {
			if err := w.coll(name).SetAttrs(ByID(id), a); err != nil {
				t.Fatal(err)
			}
		}
		w.attrs[id] = a
	}
	w.check(filterExprs, rng)

	// A field indexed later, one dropped.
	if err := w.coll("ix").IndexField("step", true); err != nil {
		t.Fatal(err)
	}
	if err := w.coll("ix").IndexField("kind", false); err != nil {
		t.Fatal(err)
	}
	if f, _ := w.coll("ix").IndexedFields(); !slices.Equal(f, []string{"step", "tenant"}) {
		t.Fatalf("IndexedFields = %v", f)
	}
	w.check(filterExprs, rng)

	// Restart: from the log, then from a checkpoint.
	w.reopen()
	if f, _ := w.coll("ix").IndexedFields(); !slices.Equal(f, []string{"step", "tenant"}) {
		t.Fatalf("IndexedFields after replay = %v", f)
	}
	w.check(filterExprs, rng)
	if err := w.db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if err := w.coll("ix").IndexField("tags", true); err != nil {
		t.Fatal(err)
	}
	w.reopen()
	if f, _ := w.coll("ix").IndexedFields(); !slices.Equal(f, []string{"step", "tags", "tenant"}) {
		t.Fatalf("IndexedFields after a checkpoint = %v", f)
	}
	w.check(filterExprs, rng)

	// Delete by filter deletes exactly the matching memories.
	e, _ := filter.Parse(`.tenant == "t1" or .step == 4`)
	gone := w.want(e)
	for _, name := range []string{"ix", "plain"} {
		if n, err := w.coll(name).DeleteFilter(e); err != nil || n != len(gone) {
			t.Fatalf("%s: DeleteFilter = %d, %v; want %d", name, n, err, len(gone))
		}
	}
	for _, id := range gone {
		delete(w.attrs, id)
		delete(w.vecs, id)
	}
	w.check(filterExprs, rng)
	w.reopen()
	w.check(filterExprs, rng)
	w.add(rng, 50) // rows after the deletes
	w.check(filterExprs, rng)
}

// TestRetrieveSkipsExpiredInPhase1: memories that have expired but are not
// swept yet take no phase-1 slot: a retrieval still gets K1 live
// candidates.
func TestRetrieveSkipsExpiredInPhase1(t *testing.T) {
	fs := vfs.NewMemFS()
	now := int64(1_800_000_000) * 1e9
	o := crashOpts(fs)
	o.Now = func() time.Time { return time.Unix(0, now) }
	o.SweepInterval = -1
	db, err := Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cfg := NewConfig(2)
	cfg.Metric = L2
	if err := db.Create("c", cfg); err != nil {
		t.Fatal(err)
	}
	c, _ := db.Collection("c")
	for i := range 20 {
		req := AddRequest{Vector: []float32{float32(i), 0}}
		if i < 5 {
			req.TTL = time.Second // the five nearest expire
		}
		if _, err := c.Add(req); err != nil {
			t.Fatal(err)
		}
	}
	now += 2e9
	opt := NewRetrieveOptions()
	opt.K1, opt.K2, opt.Lambda = 5, 5, 0
	res, err := c.Retrieve([]float32{0, 0}, opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 5 || res[0].ID != 6 {
		t.Fatalf("retrieval with the 5 nearest expired = %+v, want ids 6..10", res)
	}
}

// TestFilteredRetrieveWhileWriting runs filtered retrievals, counts and
// scans (which read the attribute bitmaps under the read lock, several at
// once) beside adds, attribute changes and deletes (which change them
// under the write lock). Run with -race.
func TestFilteredRetrieveWhileWriting(t *testing.T) {
	db, err := Open(t.TempDir(), Options{Sync: wal.SyncNone, Logf: func(string, ...any) {}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cfg := NewConfig(filterDim)
	cfg.Indexed = []string{"tenant", "tags"}
	if err := db.Create("c", cfg); err != nil {
		t.Fatal(err)
	}
	c, _ := db.Collection("c")
	e, _ := filter.Parse(`.tenant == "t1" and "plan" in .tags`)
	done := make(chan struct{})
	errs := make(chan error, 3)
	for g := range 3 {
		go func() {
			rng := rand.New(rand.NewSource(int64(g)))
			q := make([]float32, filterDim)
			opt := NewRetrieveOptions()
			opt.Filter, opt.WithAttrs = e, true
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				for i := range q {
					q[i] = rng.Float32()
				}
				res, err := c.Retrieve(q, opt)
				for _, r := range res {
					// Attributes read under the retrieval's own lock hold.
					if !e.Match(r.Attrs) {
						err = fmt.Errorf("memory %d (%s) returned for %s", r.ID, r.Attrs, e)
					}
				}
				if err == nil {
					_, err = c.CountFilter(e)
				}
				if err == nil {
					_, _, err = c.Scan(0, ScanOptions{Count: 10, Filter: e})
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	rng := rand.New(rand.NewSource(99))
	var ids []uint64
	for i := range 1500 {
		v := make([]float32, filterDim)
		for j := range v {
			v[j] = rng.Float32()
		}
		id, err := c.Add(AddRequest{Vector: v, Attrs: randomAttrs(rng)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		switch i % 5 {
		case 1:
			if err := c.SetAttrs(ByID(ids[rng.Intn(len(ids))]), randomAttrs(rng)); err != nil && !errors.Is(err, ErrNoMemory) {
				t.Fatal(err)
			}
		case 3:
			if _, err := c.Delete([]uint64{ids[rng.Intn(len(ids))]}); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(done)
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
