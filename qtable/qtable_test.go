package qtable

import (
	"errors"
	"math"
	"sync"
	"testing"
)

func TestTD(t *testing.T) {
	cases := []struct{ q, r, a, g, next, want float64 }{
		{0, 1, 0.3, 0, 0, 0.3},
		{0.3, 1, 0.3, 0, 0, 0.51},
		{0.5, 0, 0.5, 0, 0, 0.25},
		{0, 1, 0.5, 0.9, 1, 0.95}, // 0 + .5*(1 + .9*1 - 0)
		{1, -1, 0.1, 0.5, 2, 0.9}, // 1 + .1*(-1 + 1 - 1)
		{2, 2, 1, 0, 0, 2},        // alpha 1 replaces
		{2, 5, 0, 0.9, 9, 2},      // alpha 0 keeps
	}
	for _, c := range cases {
		if got := TD(c.q, c.r, c.a, c.g, c.next); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("TD(%v,%v,%v,%v,%v) = %v, want %v", c.q, c.r, c.a, c.g, c.next, got, c.want)
		}
	}
}

func TestPutGetDeleteUpdate(t *testing.T) {
	tb := New()
	if _, ok := tb.Get(1); ok {
		t.Fatal("empty table has id 1")
	}
	tb.Put(1, Entry{Q: 0.5})
	if e, ok := tb.Get(1); !ok || e.Q != 0.5 {
		t.Fatalf("Get(1) = %v, %v", e, ok)
	}
	if _, err := tb.Update(2, func(*Entry) error { return nil }); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Update of missing id: %v", err)
	}
	boom := errors.New("boom")
	if _, err := tb.Update(1, func(e *Entry) error { e.Q = 9; return boom }); err != boom {
		t.Fatalf("Update error = %v", err)
	}
	if e, _ := tb.Get(1); e.Q != 0.5 {
		t.Fatalf("failed Update changed the entry: %v", e)
	}
	e, err := tb.Update(1, func(e *Entry) error { e.Q = 1; e.Visits++; return nil })
	if err != nil || e.Q != 1 || e.Visits != 1 {
		t.Fatalf("Update = %v, %v", e, err)
	}
	if tb.Len() != 1 || !tb.Delete(1) || tb.Delete(1) || tb.Len() != 0 {
		t.Fatal("Delete/Len wrong")
	}
}

// TestConcurrentRewardsOneID runs 16 goroutines rewarding one id. With
// alpha = 1 and reward = the visit number seen, each update's result depends
// on the one before, so a lost update shows as a visit count short of the
// total.
func TestConcurrentRewardsOneID(t *testing.T) {
	tb := New()
	tb.Put(7, Entry{})
	const workers, each = 16, 1000
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				tb.Update(7, func(e *Entry) error {
					e.Q = TD(e.Q, 1, 0.1, 0, 0)
					e.Visits++
					e.RewardSum++
					return nil
				})
			}
		}()
	}
	wg.Wait()
	e, _ := tb.Get(7)
	if e.Visits != workers*each || e.RewardSum != workers*each {
		t.Fatalf("visits %d, reward sum %v: want %d", e.Visits, e.RewardSum, workers*each)
	}
	// Q after n updates toward 1 with alpha .1 from 0 is 1 - .9^n.
	want := 1 - math.Pow(0.9, workers*each)
	if math.Abs(e.Q-want) > 1e-9 {
		t.Fatalf("Q = %v, want %v", e.Q, want)
	}
}

func TestRangeAndMaxQ(t *testing.T) {
	tb := New()
	for i := uint64(0); i < 1000; i++ {
		tb.Put(i, Entry{Q: float64(i)})
	}
	n := 0
	tb.Range(func(id uint64, e Entry) bool { n++; return e.Q == float64(id) })
	if n != 1000 {
		t.Fatalf("Range visited %d", n)
	}
	if q, ok := tb.MaxQ([]uint64{3, 999, 5000}); !ok || q != 999 {
		t.Fatalf("MaxQ = %v %v", q, ok)
	}
	if _, ok := tb.MaxQ([]uint64{5000}); ok {
		t.Fatal("MaxQ of unknown ids found one")
	}
}

func BenchmarkUpdateParallel(b *testing.B) { benchUpdateParallel(b, 1<<16) }

// BenchmarkUpdateParallelSmall is BenchmarkUpdateParallel on a table of
// 256 entries, which has fewer stripes than a large one (issue 26 item 4).
func BenchmarkUpdateParallelSmall(b *testing.B) { benchUpdateParallel(b, 256) }

// benchUpdateParallel measures rewards on distinct ids of a table of n
// entries (n a power of two) from GOMAXPROCS goroutines.
func benchUpdateParallel(b *testing.B, n uint64) {
	tb := New()
	for i := uint64(0); i < n; i++ {
		tb.Put(i, Entry{})
	}
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		id := uint64(0)
		for pb.Next() {
			id = (id + 7919) & (n - 1)
			tb.Update(id, func(e *Entry) error { e.Q = TD(e.Q, 1, 0.3, 0, 0); e.Visits++; return nil })
		}
	})
}

// TestDeleteKeepsOthers deletes from the middle of stripes and checks that
// every remaining id keeps its own entry (the swap-with-last bookkeeping).
func TestDeleteKeepsOthers(t *testing.T) {
	tb := New()
	const n = 5000
	for i := uint64(0); i < n; i++ {
		tb.Put(i, Entry{Q: float64(i), Visits: i})
	}
	for i := uint64(0); i < n; i += 3 {
		if !tb.Delete(i) {
			t.Fatalf("Delete(%d) found nothing", i)
		}
	}
	for i := uint64(0); i < n; i++ {
		e, ok := tb.Get(i)
		if ok != (i%3 != 0) || ok && (e.Q != float64(i) || e.Visits != i) {
			t.Fatalf("id %d: %+v %v", i, e, ok)
		}
	}
	if tb.Len() != n-(n+2)/3 {
		t.Fatalf("Len %d", tb.Len())
	}
	seen := 0
	tb.Range(func(id uint64, e Entry) bool {
		if e.Q != float64(id) {
			t.Fatalf("Range: id %d entry %+v", id, e)
		}
		seen++
		return true
	})
	if seen != tb.Len() {
		t.Fatalf("Range saw %d of %d", seen, tb.Len())
	}
	tb.Put(0, Entry{Q: -1}) // re-insert after delete
	if e, _ := tb.Get(0); e.Q != -1 {
		t.Fatal("re-insert")
	}
}
