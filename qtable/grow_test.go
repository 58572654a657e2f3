package qtable

import (
	"runtime"
	"sync"
	"testing"
)

// TestSmallTableIsSmall (issue 26 item 4): an empty table costs about a
// KiB, not the 68 KiB of 256 stripes, so thousands of small collections
// do not cost megabytes each.
func TestSmallTableIsSmall(t *testing.T) {
	const n = 1000
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.HeapInuse
	tables := make([]*Table, n)
	for i := range tables {
		tables[i] = New()
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	per := (int64(ms.HeapInuse) - int64(before)) / n
	runtime.KeepAlive(tables)
	if per > 4<<10 {
		t.Fatalf("an empty table holds %d bytes, want <= 4 KiB", per)
	}
}

// TestGrowKeepsEntries: a table grows to all its stripes as it fills, and
// growing keeps every entry, its dirty mark and the Q sums.
func TestGrowKeepsEntries(t *testing.T) {
	tb := New()
	if got := len(tb.set.Load().stripes); got != 1<<minBits {
		t.Fatalf("a new table has %d stripes, want %d", got, 1<<minBits)
	}
	const n = 20000
	for i := uint64(0); i < n; i++ {
		if i%2 == 0 {
			tb.Put(i, Entry{Q: float64(i % 7), Visits: i})
		} else {
			tb.Load(i, Entry{Q: float64(i % 7), Visits: i})
		}
	}
	if got := len(tb.set.Load().stripes); got != NumStripes {
		t.Fatalf("a table of %d entries has %d stripes, want %d", n, got, NumStripes)
	}
	for i := uint64(0); i < n; i++ {
		if e, ok := tb.Get(i); !ok || e.Visits != i {
			t.Fatalf("id %d after growth: %+v %v", i, e, ok)
		}
	}
	got := takeAll(tb)
	if len(got) != n/2 {
		t.Fatalf("took %d dirty entries, want the %d put ones", len(got), n/2)
	}
	for id := range got {
		if id%2 != 0 {
			t.Fatalf("loaded id %d came back dirty", id)
		}
	}
	var sum float64
	for i := uint64(0); i < n; i++ {
		sum += float64(i % 7)
	}
	if st := tb.QStats(); st.N != n || st.Mean-sum/n > 1e-9 || sum/n-st.Mean > 1e-9 {
		t.Fatalf("QStats %+v, want N %d mean %v", st, n, sum/n)
	}
}

// TestGrowConcurrent: inserts, updates, takes and ranges running while the
// table grows lose no update and no dirty mark. Run with -race.
func TestGrowConcurrent(t *testing.T) {
	tb := New()
	const writers, perWriter, rounds = 4, 3000, 3
	taken := map[uint64]uint64{} // id -> Visits last taken
	stop := make(chan struct{})
	var takerDone sync.WaitGroup
	takerDone.Add(2)
	take := func() {
		var buf []IDEntry
		for i := 0; i < NumStripes; i++ {
			buf = tb.TakeDirty(i, buf[:0])
			for _, e := range buf {
				taken[e.ID] = e.Visits
			}
		}
	}
	go func() {
		defer takerDone.Done()
		for {
			select {
			case <-stop:
				return
			default:
				take()
			}
		}
	}()
	go func() {
		defer takerDone.Done()
		for {
			select {
			case <-stop:
				return
			default:
				n := 0
				tb.Range(func(uint64, Entry) bool { n++; return true })
				if n > writers*perWriter {
					panic("Range saw more entries than exist")
				}
				tb.QStats()
			}
		}
	}()
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			base := uint64(w * perWriter)
			for i := uint64(0); i < perWriter; i++ {
				tb.Put(base+i, Entry{Visits: 1})
				// Update an earlier id, which a growth may be moving.
				id := base + i/2
				if _, err := tb.Update(id, func(e *Entry) error { e.Visits++; return nil }); err != nil {
					panic(err)
				}
			}
			for r := 0; r < rounds; r++ {
				for i := uint64(0); i < perWriter; i++ {
					tb.Update(base+i, func(e *Entry) error { e.Visits++; return nil })
				}
			}
		}(w)
	}
	wg.Wait()
	close(stop)
	takerDone.Wait()
	take()
	if tb.Len() != writers*perWriter {
		t.Fatalf("Len %d, want %d", tb.Len(), writers*perWriter)
	}
	tb.Range(func(id uint64, e Entry) bool {
		if taken[id] != e.Visits {
			t.Fatalf("id %d: last taken Visits %d, table has %d: a dirty mark was lost", id, taken[id], e.Visits)
		}
		return true
	})
}
