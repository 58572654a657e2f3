package histo

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestBucketsTileTheRange checks that buckets are contiguous, ascending,
// and that every value lands in the bucket whose bounds hold it.
func TestBucketsTileTheRange(t *testing.T) {
	lo := uint64(0)
	for i := 0; i < overflow; i++ {
		hi := Upper(i)
		if hi <= lo {
			t.Fatalf("bucket %d: upper %d <= lower %d", i, hi, lo)
		}
		if i >= sub && float64(hi-lo) > float64(lo)/sub+1e-9 {
			t.Fatalf("bucket %d [%d,%d) wider than 1/16 of its lower bound", i, lo, hi)
		}
		for _, v := range []uint64{lo, hi - 1, lo + (hi-lo)/2} {
			if b := bucketOf(v); b != i {
				t.Fatalf("value %d in bucket %d, want %d [%d,%d)", v, b, i, lo, hi)
			}
		}
		lo = hi
	}
	if lo != 1<<maxExp {
		t.Fatalf("regular buckets end at %d, want 2^%d", lo, maxExp)
	}
	if bucketOf(1<<maxExp) != overflow || bucketOf(^uint64(0)) != overflow {
		t.Fatal("large values not in the overflow bucket")
	}
}

// TestQuantilesWithinOneBucket compares quantiles with the exact ones of a
// random sample: each is at least the exact value and overstates it by at
// most a bucket width (6.25%).
func TestQuantilesWithinOneBucket(t *testing.T) {
	var h Histogram
	r := rand.New(rand.NewPCG(1, 2))
	vals := make([]time.Duration, 10000)
	for i := range vals {
		vals[i] = time.Duration(r.ExpFloat64() * float64(200*time.Microsecond))
		h.Record(vals[i])
	}
	slices.Sort(vals)
	var s Snapshot
	h.Snapshot(&s)
	if s.Count != uint64(len(vals)) {
		t.Fatalf("Count = %d, want %d", s.Count, len(vals))
	}
	var sum uint64
	for _, v := range vals {
		sum += uint64(v)
	}
	if s.Sum != sum {
		t.Fatalf("Sum = %d, want %d", s.Sum, sum)
	}
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999, 1} {
		exact := vals[int(q*float64(len(vals)))-1]
		got := s.Quantile(q)
		if got < exact || float64(got) > float64(exact)*1.0625+16 {
			t.Errorf("q%v = %v, exact %v", q, got, exact)
		}
	}
}

func TestEmptyAndCumulative(t *testing.T) {
	var h Histogram
	var s Snapshot
	h.Snapshot(&s)
	if s.Quantile(0.5) != 0 || s.Count != 0 {
		t.Fatalf("empty histogram: q50 %v, count %d", s.Quantile(0.5), s.Count)
	}
	h.Record(-5) // counts as 0
	h.Record(1023)
	h.Record(1024)
	h.Record(time.Hour) // overflow
	h.Snapshot(&s)
	if got := s.CumulativeAt(10); got != 2 {
		t.Fatalf("below 1024 ns: %d, want 2", got)
	}
	if got := s.CumulativeAt(11); got != 3 {
		t.Fatalf("below 2048 ns: %d, want 3", got)
	}
	if got := s.CumulativeAt(MaxExp); got != 3 {
		t.Fatalf("below 2^36 ns: %d, want 3 (one overflowed)", got)
	}
	if got := s.Quantile(1); got != 1<<maxExp {
		t.Fatalf("max in overflow = %v", got)
	}
}

// TestConcurrentRecord records from several goroutines (run with -race)
// and checks nothing is lost.
func TestConcurrentRecord(t *testing.T) {
	var h Histogram
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				h.Record(time.Duration(g*1000 + i))
			}
		}()
	}
	var s Snapshot
	h.Snapshot(&s) // concurrent read: must not race
	wg.Wait()
	h.Snapshot(&s)
	if s.Count != 4000 {
		t.Fatalf("Count = %d, want 4000", s.Count)
	}
}

func BenchmarkRecord(b *testing.B) {
	var h Histogram
	for i := 0; b.Loop(); i++ {
		h.Record(time.Duration(i & 0xfffff))
	}
}
