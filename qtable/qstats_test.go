package qtable

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"
)

// exactQStats computes the mean and standard deviation the slow way.
func exactQStats(t *Table) (int, float64, float64) {
	var qs []float64
	t.Range(func(_ uint64, e Entry) bool { qs = append(qs, e.Q); return true })
	if len(qs) == 0 {
		return 0, 0, 0
	}
	var sum float64
	for _, q := range qs {
		sum += q
	}
	mean := sum / float64(len(qs))
	var ss float64
	for _, q := range qs {
		ss += (q - mean) * (q - mean)
	}
	return len(qs), mean, math.Sqrt(ss / float64(len(qs)))
}

func checkQStats(t *testing.T, tb *Table, what string) {
	t.Helper()
	n, mean, std := exactQStats(tb)
	got := tb.QStats()
	if got.N != n || math.Abs(got.Mean-mean) > 1e-9*(1+math.Abs(mean)) || math.Abs(got.Std-std) > 1e-9*(1+std) {
		t.Fatalf("%s: QStats = %+v, exact n=%d mean=%v std=%v", what, got, n, mean, std)
	}
}

// TestQStatsFollowChanges checks the running sums against a full scan
// after puts, loads, updates (successful and failed), replacements and
// deletes, down to an empty table.
func TestQStatsFollowChanges(t *testing.T) {
	tb := New()
	checkQStats(t, tb, "empty")
	r := rand.New(rand.NewPCG(3, 4))
	for id := uint64(1); id <= 2000; id++ {
		if id%2 == 0 {
			tb.Put(id, Entry{Q: r.NormFloat64()})
		} else {
			tb.Load(id, Entry{Q: 5 + r.NormFloat64()})
		}
	}
	checkQStats(t, tb, "after inserts")
	for range 5000 {
		id := uint64(r.IntN(2000) + 1)
		reward := r.Float64()
		tb.Update(id, func(e *Entry) error { e.Q = TD(e.Q, reward, 0.3, 0, 0); return nil })
	}
	tb.Update(7, func(e *Entry) error { e.Q = 1e9; return ErrNotFound }) // undone
	checkQStats(t, tb, "after updates")
	for id := uint64(1); id <= 300; id++ {
		tb.Put(id, Entry{Q: -2}) // replacement
	}
	checkQStats(t, tb, "after replacements")
	for id := uint64(1); id <= 1990; id++ {
		tb.Delete(id)
	}
	checkQStats(t, tb, "after deletes")
	for id := uint64(1991); id <= 2000; id++ {
		tb.Delete(id)
	}
	if got := tb.QStats(); got != (QStats{}) {
		t.Fatalf("empty again: %+v", got)
	}
}

// TestQStatsLargeCloseValues: Q values far from 0 with a small spread
// keep their standard deviation (a plain Σq² would cancel to noise).
func TestQStatsLargeCloseValues(t *testing.T) {
	tb := New()
	for id := uint64(1); id <= 1000; id++ {
		tb.Put(id, Entry{Q: 1e8 + float64(id%2)}) // std 0.5
	}
	if got := tb.QStats(); math.Abs(got.Std-0.5) > 1e-6 || math.Abs(got.Mean-(1e8+0.5)) > 1e-6 {
		t.Fatalf("QStats = %+v, want mean 1e8+0.5, std 0.5", got)
	}
}

// TestQStatsConcurrent runs QStats beside updates (for -race).
func TestQStatsConcurrent(t *testing.T) {
	tb := New()
	for id := uint64(1); id <= 1000; id++ {
		tb.Put(id, Entry{Q: 1})
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 20000 {
			tb.Update(uint64(i%1000+1), func(e *Entry) error { e.Q = 2; return nil })
		}
	}()
	for range 100 {
		if st := tb.QStats(); st.N != 1000 || st.Mean < 1 || st.Mean > 2 {
			t.Fatalf("QStats during updates = %+v", st)
		}
	}
	wg.Wait()
	checkQStats(t, tb, "after concurrent updates")
}
