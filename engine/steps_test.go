package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/memrl/memrl/engine/filter"
	"github.com/memrl/memrl/wal"
)

// costly returns the left side of an expensive filter: a balanced sum of n
// products of .a, some kilobytes of expression that the evaluator cannot
// shortcut (some microseconds a memory; the filters of issue 26).
func costly(n int) string {
	var rec func(lo, hi int) string
	rec = func(lo, hi int) string {
		if hi-lo == 1 {
			return fmt.Sprintf(".a*%d", lo%7+1)
		}
		m := (lo + hi) / 2
		return "(" + rec(lo, m) + "+" + rec(m, hi) + ")"
	}
	return rec(0, n)
}

// stepsColl fills a collection of n memories, attributes {"a":3,"i":i},
// vectors random (seeded).
func stepsColl(t *testing.T, n int) *Collection {
	t.Helper()
	return stepsCollCfg(t, n, NewConfig(8))
}

// stepsCollCfg is stepsColl with cfg (of dimension 8).
func stepsCollCfg(t *testing.T, n int, cfg Config) *Collection {
	t.Helper()
	db, _ := openTemp(t, Options{Sync: wal.SyncNone})
	c := mustColl(t, db, "c", cfg)
	rng := rand.New(rand.NewSource(7))
	reqs := make([]AddRequest, 0, 1000)
	for i := 0; i < n; i++ {
		v := make([]float32, 8)
		for j := range v {
			v[j] = rng.Float32() - 0.5
		}
		reqs = append(reqs, AddRequest{Vector: v, Attrs: fmt.Appendf(nil, `{"a":3,"i":%d}`, i)})
		if len(reqs) == cap(reqs) || i == n-1 {
			if _, err := c.AddBatch(reqs); err != nil {
				t.Fatal(err)
			}
			reqs = reqs[:0]
		}
	}
	return c
}

// awaitReader returns once some reader holds c's read lock (the read
// under test has started), polling, or fails the test when done closes
// first or a generous deadline passes.
func awaitReader(t *testing.T, c *Collection, done <-chan struct{}) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			t.Fatal("the read ended before it was seen holding the lock")
		default:
		}
		if !c.mu.TryLock() {
			return
		}
		c.mu.Unlock()
	}
	t.Fatal("the read never took the lock")
}

// longReads are the reads of issue 26 that an expensive filter makes
// long, each returning a summary to compare.
func longReads(e *filter.Expr, q []float32) map[string]func(ctx context.Context, c *Collection) (string, error) {
	return map[string]func(ctx context.Context, c *Collection) (string, error){
		"count": func(ctx context.Context, c *Collection) (string, error) {
			n, err := c.CountFilterContext(ctx, e)
			return fmt.Sprint(n), err
		},
		"scan": func(ctx context.Context, c *Collection) (string, error) {
			page, next, err := c.ScanContext(ctx, 0, ScanOptions{Count: MaxScanCount, Filter: e})
			ids := make([]uint64, len(page))
			for i, mi := range page {
				ids[i] = mi.ID
			}
			return fmt.Sprint(ids, next), err
		},
		"retrieve": func(ctx context.Context, c *Collection) (string, error) {
			opt := NewRetrieveOptions()
			opt.Filter, opt.K1, opt.K2 = e, 20, 20
			res, err := c.RetrieveContext(ctx, q, opt)
			ids := make([]uint64, len(res))
			for i, r := range res {
				ids[i] = r.ID
			}
			return fmt.Sprint(ids), err
		},
	}
}

// TestStepsWriterPassesLongRead: an add to a collection completes while a
// filtered count, scan page or retrieval with an expensive filter is in
// progress, instead of waiting for it to end; and the read's result is the
// one it has without the add (the added memory does not match).
func TestStepsWriterPassesLongRead(t *testing.T) {
	const n = 20000
	c := stepsColl(t, n)
	e, err := filter.Parse(costly(512) + " > 0 and .i % 1000 == 7")
	if err != nil {
		t.Fatal(err)
	}
	q := []float32{1, 0, 0, 0, 0, 0, 0, 0}
	for _, name := range []string{"count", "scan", "retrieve"} {
		read := longReads(e, q)[name]
		t.Run(name, func(t *testing.T) {
			want, err := read(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			var got string
			var readErr error
			go func() {
				defer close(done)
				got, readErr = read(context.Background(), c)
			}()
			awaitReader(t, c, done)
			if _, err := c.Add(AddRequest{Vector: q, Attrs: []byte(`{"a":3,"i":1}`)}); err != nil {
				t.Fatal(err)
			}
			select {
			case <-done:
				t.Fatal("the add waited for the whole read")
			default:
			}
			<-done
			if readErr != nil {
				t.Fatal(readErr)
			}
			if got != want {
				t.Fatalf("with an add during the read: %s, without: %s", got, want)
			}
		})
	}
}

// TestStepsContextStops: a long read whose context is cancelled, or whose
// deadline passes, before or while it runs stops with an error wrapping
// the context's.
func TestStepsContextStops(t *testing.T) {
	c := stepsColl(t, 20000)
	e, err := filter.Parse(costly(512) + " > 0 and .i % 1000 == 7")
	if err != nil {
		t.Fatal(err)
	}
	q := []float32{1, 0, 0, 0, 0, 0, 0, 0}
	for name, read := range longReads(e, q) {
		t.Run(name+"/before", func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if _, err := read(ctx, c); !errors.Is(err, context.Canceled) {
				t.Fatalf("got %v, want context.Canceled", err)
			}
		})
		t.Run(name+"/during", func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan struct{})
			var readErr error
			go func() {
				defer close(done)
				_, readErr = read(ctx, c)
			}()
			awaitReader(t, c, done)
			cancel()
			<-done
			if !errors.Is(readErr, context.Canceled) {
				t.Fatalf("got %v, want context.Canceled", readErr)
			}
		})
		t.Run(name+"/deadline", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
			defer cancel()
			if _, err := read(ctx, c); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("got %v, want context.DeadlineExceeded", err)
			}
		})
	}
}

// shortSteps makes every stepped read take a step per stepCheck rows (an
// unfiltered exact scan, a step per batch of scanBatch rows).
func shortSteps(t *testing.T) {
	old, oldValues := stepTimeNanos.Load(), stepCheckValues.Load()
	stepTimeNanos.Store(1)
	stepCheckValues.Store(1)
	t.Cleanup(func() { stepTimeNanos.Store(old); stepCheckValues.Store(oldValues) })
}

// TestStepsSameResults: with steps of stepCheck rows (thousands of steps),
// counts and scans by filter equal a plain evaluation of the filter on
// every memory, and filtered retrievals equal those made in one step, on
// random attributes with indexed and unindexed fields and deleted
// memories.
func TestStepsSameResults(t *testing.T) {
	db, _ := openTemp(t, Options{Sync: wal.SyncNone})
	cfg := NewConfig(4)
	cfg.Indexed = []string{"user"}
	c := mustColl(t, db, "c", cfg)
	rng := rand.New(rand.NewSource(3))
	attrs := map[uint64][]byte{}
	for i := 0; i < 5000; i++ {
		v := []float32{rng.Float32(), rng.Float32(), rng.Float32(), rng.Float32()}
		a := fmt.Appendf(nil, `{"user":"u%d","n":%d,"tags":["t%d"]}`, rng.Intn(5), rng.Intn(100), rng.Intn(3))
		if rng.Intn(10) == 0 {
			a = nil
		}
		id, err := c.Add(AddRequest{Vector: v, Attrs: a})
		if err != nil {
			t.Fatal(err)
		}
		attrs[id] = a
	}
	var del []uint64
	for id := range attrs {
		if rng.Intn(5) == 0 {
			del = append(del, id)
		}
	}
	if _, err := c.Delete(del); err != nil {
		t.Fatal(err)
	}
	for _, id := range del {
		delete(attrs, id)
	}
	ids := make([]uint64, 0, len(attrs))
	for id := range attrs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	shortSteps(t)
	for _, src := range []string{
		`.n > 50`,                        // unindexed: every live id
		`.user == "u1"`,                  // indexed, exact
		`.user == "u2" and .n % 3 == 0`,  // indexed, inexact
		`.user != "u0" or "t1" in .tags`, // mixed
		`.n < 0`,                         // matches nothing
		``,                               // no filter: the exact scan alone
	} {
		if src == "" {
			for k := 0; k < 5; k++ {
				q := []float32{rng.Float32(), rng.Float32(), rng.Float32(), rng.Float32()}
				opt := NewRetrieveOptions()
				opt.K1, opt.K2 = 1+rng.Intn(50), 10
				stepped, err := c.Retrieve(q, opt)
				if err != nil {
					t.Fatal(err)
				}
				stepTimeNanos.Store(int64(time.Hour))
				whole, err := c.Retrieve(q, opt)
				stepTimeNanos.Store(1)
				if err != nil {
					t.Fatal(err)
				}
				// The same batches scored by the same kernel: the same
				// similarities to the last bit.
				same := len(stepped) == len(whole)
				for i := 0; same && i < len(whole); i++ {
					same = stepped[i].ID == whole[i].ID && stepped[i].Sim == whole[i].Sim
				}
				if !same {
					t.Fatalf("no filter, K1 %d: in steps %+v, in one %+v", opt.K1, stepped, whole)
				}
			}
			continue
		}
		e, err := filter.Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		var want []uint64
		for _, id := range ids {
			if e.Match(attrs[id]) {
				want = append(want, id)
			}
		}
		n, err := c.CountFilter(e)
		if err != nil || n != len(want) {
			t.Fatalf("%s: count %d, %v; want %d", src, n, err, len(want))
		}
		got := scanAll(t, c, ScanOptions{Count: 7, Filter: e})
		if !slices.Equal(got, want) {
			t.Fatalf("%s: scan returned %d ids, want %d", src, len(got), len(want))
		}
		for k := 0; k < 5; k++ {
			q := []float32{rng.Float32(), rng.Float32(), rng.Float32(), rng.Float32()}
			opt := NewRetrieveOptions()
			opt.Filter, opt.K1, opt.K2 = e, 1+rng.Intn(50), 10
			stepped, err := c.Retrieve(q, opt)
			if err != nil {
				t.Fatal(err)
			}
			stepTimeNanos.Store(int64(time.Hour))
			whole, err := c.Retrieve(q, opt)
			stepTimeNanos.Store(1)
			if err != nil {
				t.Fatal(err)
			}
			// The same memories in the same order. Similarities may
			// differ in the last bits: scoring the allowed rows one by
			// one sums in another order than the batched scan.
			if len(stepped) != len(whole) {
				t.Fatalf("%s K1 %d: in steps %v, in one %v", src, opt.K1, stepped, whole)
			}
			for i := range whole {
				if stepped[i].ID != whole[i].ID || math.Abs(stepped[i].Sim-whole[i].Sim) > 1e-5 {
					t.Fatalf("%s K1 %d: result %d: in steps %+v, in one %+v", src, opt.K1, i, stepped[i], whole[i])
				}
			}
		}
	}
}

// TestStepsUnderChurn: stepped counts, scans and retrievals by filter,
// run while other goroutines add and delete memories that do not match
// and compact the collection (renumbering its rows between steps), always
// see exactly the matching memories, which stay put. Run with -race.
func TestStepsUnderChurn(t *testing.T) {
	db, _ := openTemp(t, Options{Sync: wal.SyncNone})
	cfg := NewConfig(4)
	cfg.Indexed = []string{"user"}
	c := mustColl(t, db, "c", cfg)
	var keep []uint64
	for i := 0; i < 3000; i++ {
		a := []byte(`{"user":"other","n":1}`)
		if i%3 == 0 {
			a = []byte(`{"user":"keep","n":2}`)
		}
		id, err := c.Add(AddRequest{Vector: []float32{1, float32(i % 17), 0, 1}, Attrs: a})
		if err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			keep = append(keep, id)
		}
	}
	sort.Slice(keep, func(i, j int) bool { return keep[i] < keep[j] })
	shortSteps(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // churn: adds and deletes of memories that do not match
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			id, err := c.Add(AddRequest{Vector: []float32{0, 1, float32(i % 5), 1}, Attrs: []byte(`{"user":"churn","n":2}`)})
			if err != nil {
				t.Error(err)
				return
			}
			if i%2 == 0 {
				if _, err := c.Delete([]uint64{id}); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	go func() { // compactions renumber the rows
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := c.Compact(); err != nil && !errors.Is(err, ErrCompacting) {
				t.Error(err)
				return
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	for _, src := range []string{`.user == "keep"`, `.user == "keep" and .n == 2`, `.n == 2 and .user != "churn"`} {
		e, err := filter.Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		for round := 0; round < 3; round++ {
			if n, err := c.CountFilter(e); err != nil || n != len(keep) {
				t.Fatalf("%s: count %d, %v; want %d", src, n, err, len(keep))
			}
			if got := scanAll(t, c, ScanOptions{Count: 100, Filter: e}); !slices.Equal(got, keep) {
				t.Fatalf("%s: scan returned %d ids, want %d", src, len(got), len(keep))
			}
			opt := NewRetrieveOptions()
			opt.Filter, opt.K1, opt.K2 = e, 50, 50
			res, err := c.Retrieve([]float32{1, 3, 0, 1}, opt)
			if err != nil || len(res) != 50 {
				t.Fatalf("%s: retrieve %d results, %v", src, len(res), err)
			}
			for _, r := range res {
				if _, ok := slices.BinarySearch(keep, r.ID); !ok {
					t.Fatalf("%s: retrieve returned %d, which does not match", src, r.ID)
				}
			}
		}
	}
}

// pauseAtStep makes the next stepped read stop between its first two
// steps, with the collection's lock released: paused is closed then, and
// the read goes on once resume is called (resume is called at the end of
// the test anyway).
func pauseAtStep(t *testing.T) (paused <-chan struct{}, resume func()) {
	p, r := make(chan struct{}), make(chan struct{})
	var once, resumed sync.Once
	h := func() {
		once.Do(func() {
			close(p)
			<-r
		})
	}
	yieldHook.Store(&h)
	resume = func() { resumed.Do(func() { close(r) }) }
	t.Cleanup(func() { resume(); yieldHook.Store(nil) })
	return p, resume
}

// TestStepsWriterPassesExactScan: an unfiltered retrieval that scans a
// FLAT collection exactly does so in steps, and an add completes between
// two of them, while the retrieval is in progress; the retrieval then
// returns what it does without the add (the added memory, the query
// itself, is past the rows the scan began with).
func TestStepsWriterPassesExactScan(t *testing.T) {
	cfg := NewConfig(8)
	cfg.Index.Kind = IndexFlat
	c := stepsCollCfg(t, 100000, cfg)
	q := []float32{1, 0, 0, 0, 0, 0, 0, 0}
	read := func() (string, error) {
		opt := NewRetrieveOptions()
		opt.K1, opt.K2 = 20, 20
		res, err := c.Retrieve(q, opt)
		ids := make([]uint64, len(res))
		for i, r := range res {
			ids[i] = r.ID
		}
		return fmt.Sprint(ids), err
	}
	want, err := read()
	if err != nil {
		t.Fatal(err)
	}
	shortSteps(t) // a step per batch: about 400 steps
	paused, resume := pauseAtStep(t)
	done := make(chan struct{})
	var got string
	var readErr error
	go func() {
		defer close(done)
		got, readErr = read()
	}()
	select {
	case <-paused:
	case <-done:
		t.Fatal("the scan ran in one step: a writer would wait for all of it")
	}
	if _, err := c.Add(AddRequest{Vector: q}); err != nil {
		t.Fatal(err)
	}
	resume()
	<-done
	if readErr != nil {
		t.Fatal(readErr)
	}
	if got != want {
		t.Fatalf("with an add during the scan: %s, without: %s", got, want)
	}
}

// TestStepsDeleteFilterLetsWritersIn: MEM.DEL FILTER with an expensive
// filter evaluates it in read-locked steps, so an add and an attribute
// change complete in the middle; the memory changed not to match is not
// deleted, every memory matching throughout is.
func TestStepsDeleteFilterLetsWritersIn(t *testing.T) {
	c := stepsColl(t, 20000)
	e, err := filter.Parse(costly(512) + " > 0 and .i % 1000 == 7")
	if err != nil {
		t.Fatal(err)
	}
	first := scanAll(t, c, ScanOptions{Count: 10, Filter: mustParseFilter(t, `.i == 7`)})
	if len(first) != 1 {
		t.Fatalf("memories with .i == 7: %v", first)
	}
	paused, resume := pauseAtStep(t)
	done := make(chan struct{})
	var n int
	var delErr error
	go func() {
		defer close(done)
		n, _, delErr = c.DeleteFilterDeferred(e)
	}()
	select {
	case <-paused:
	case <-done:
		t.Fatal("the delete evaluated its filter in one hold of the lock: writers wait for all of it")
	}
	if _, err := c.Add(AddRequest{Vector: []float32{1, 0, 0, 0, 0, 0, 0, 0}, Attrs: []byte(`{"a":3,"i":1}`)}); err != nil {
		t.Fatal(err)
	}
	// Memory .i == 7 comes first in id order: it matched in the first step.
	if err := c.SetAttrs(ByID(first[0]), []byte(`{"a":3,"i":8}`)); err != nil {
		t.Fatal(err)
	}
	resume()
	<-done
	if delErr != nil || n != 19 {
		t.Fatalf("deleted %d, %v; want 19", n, delErr)
	}
	if left, err := c.CountFilter(e); err != nil || left != 0 {
		t.Fatalf("left matching: %d, %v", left, err)
	}
	if _, err := c.Get(first[0]); err != nil {
		t.Fatalf("the memory changed not to match during the delete: %v", err)
	}
}

// TestStepsDeleteFilterStopped: a MEM.DEL FILTER whose context is
// cancelled while its filter is being evaluated fails with an error
// wrapping the context's, and deletes nothing.
func TestStepsDeleteFilterStopped(t *testing.T) {
	c := stepsColl(t, 20000)
	e, err := filter.Parse(costly(512) + " > 0 and .i % 1000 == 7")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	paused, resume := pauseAtStep(t)
	done := make(chan struct{})
	var delErr error
	go func() {
		defer close(done)
		_, _, delErr = c.DeleteFilterContext(ctx, e)
	}()
	select {
	case <-paused:
	case <-done:
		t.Fatal("the delete evaluated its filter in one step")
	}
	cancel()
	resume()
	<-done
	if !errors.Is(delErr, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", delErr)
	}
	if left, err := c.CountFilter(e); err != nil || left != 20 {
		t.Fatalf("matching after the stopped delete: %d, %v; want 20", left, err)
	}
}

// TestStepsDeleteFilterBatches: with steps of stepCheck memories, a
// MEM.DEL FILTER matching half of the memories deletes them in many
// batches, exactly them.
func TestStepsDeleteFilterBatches(t *testing.T) {
	c := stepsColl(t, 3000)
	shortSteps(t)
	e := mustParseFilter(t, `.i % 2 == 1`)
	n, err := c.DeleteFilter(e)
	if err != nil || n != 1500 {
		t.Fatalf("deleted %d, %v; want 1500", n, err)
	}
	if left, err := c.CountFilter(e); err != nil || left != 0 {
		t.Fatalf("left matching: %d, %v", left, err)
	}
	if all, err := c.Count(); err != nil || all != 1500 {
		t.Fatalf("left: %d, %v; want 1500", all, err)
	}
}

// TestStepsPruneFilterLetsWritersIn: MEM.PRUNE … FILTER with an expensive
// filter evaluates it in read-locked steps, so an add completes in the
// middle; the memory changed meanwhile not to match is not pruned, every
// memory matching throughout is; a cancelled context prunes nothing.
func TestStepsPruneFilterLetsWritersIn(t *testing.T) {
	c := stepsColl(t, 20000)
	e := mustParseFilter(t, costly(512)+" > 0 and .i % 1000 == 7")
	first := scanAll(t, c, ScanOptions{Count: 10, Filter: mustParseFilter(t, `.i == 7`)})
	if len(first) != 1 {
		t.Fatalf("memories with .i == 7: %v", first)
	}
	o := PruneOptions{QBelow: math.MaxFloat64, HasQBelow: true, Filter: e}

	ctx, cancel := context.WithCancel(context.Background())
	paused, resume := pauseAtStep(t)
	done := make(chan struct{})
	var pruneErr error
	go func() {
		defer close(done)
		_, _, pruneErr = c.PruneContext(ctx, o)
	}()
	select {
	case <-paused:
	case <-done:
		t.Fatal("the prune evaluated its filter in one hold of the lock")
	}
	cancel()
	resume()
	<-done
	if !errors.Is(pruneErr, context.Canceled) {
		t.Fatalf("cancelled: got %v, want context.Canceled", pruneErr)
	}
	if left, err := c.CountFilter(e); err != nil || left != 20 {
		t.Fatalf("matching after the stopped prune: %d, %v; want 20", left, err)
	}

	paused, resume = pauseAtStep(t)
	done = make(chan struct{})
	var n int
	go func() {
		defer close(done)
		n, _, pruneErr = c.Prune(o)
	}()
	select {
	case <-paused:
	case <-done:
		t.Fatal("the prune evaluated its filter in one hold of the lock: writers wait for all of it")
	}
	if _, err := c.Add(AddRequest{Vector: []float32{1, 0, 0, 0, 0, 0, 0, 0}, Attrs: []byte(`{"a":3,"i":1}`)}); err != nil {
		t.Fatal(err)
	}
	if err := c.SetAttrs(ByID(first[0]), []byte(`{"a":3,"i":8}`)); err != nil {
		t.Fatal(err)
	}
	resume()
	<-done
	if pruneErr != nil || n != 19 {
		t.Fatalf("pruned %d, %v; want 19", n, pruneErr)
	}
	if left, err := c.CountFilter(e); err != nil || left != 0 {
		t.Fatalf("left matching: %d, %v", left, err)
	}
	if _, err := c.Get(first[0]); err != nil {
		t.Fatalf("the memory changed not to match during the prune: %v", err)
	}
}
