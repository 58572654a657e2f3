package qtable

import (
	"sync"
	"testing"
)

func takeAll(t *Table) map[uint64]Entry {
	got := map[uint64]Entry{}
	var buf []IDEntry
	for i := 0; i < NumStripes; i++ {
		buf = t.TakeDirty(i, buf[:0])
		for _, e := range buf {
			if _, dup := got[e.ID]; dup {
				panic("id taken twice in one pass")
			}
			got[e.ID] = e.Entry
		}
	}
	return got
}

func TestTakeDirty(t *testing.T) {
	tb := New()
	tb.Load(1, Entry{Q: 1})
	tb.Put(2, Entry{Q: 2})
	tb.Put(3, Entry{Q: 3})
	tb.Update(2, func(e *Entry) error { e.Q = 20; return nil })
	tb.Delete(3)
	got := takeAll(tb)
	if len(got) != 1 || got[2].Q != 20 {
		t.Fatalf("first take %v, want only 2 (Q 20): loaded entries are clean, deleted ones gone", got)
	}
	if got := takeAll(tb); len(got) != 0 {
		t.Fatalf("second take %v, want nothing", got)
	}
	tb.Update(1, func(e *Entry) error { e.Q = 10; return nil })
	tb.Put(3, Entry{Q: 30}) // re-added after its delete
	tb.Update(9, func(e *Entry) error { return nil })
	if got := takeAll(tb); len(got) != 2 || got[1].Q != 10 || got[3].Q != 30 {
		t.Fatalf("third take %v", got)
	}
	// A failed update leaves the entry clean.
	tb.Update(1, func(e *Entry) error { e.Q = 99; return ErrNotFound })
	if got := takeAll(tb); len(got) != 0 {
		t.Fatalf("a failed update marked %v", got)
	}
	// Delete moves the last entry of a stripe into the hole: its mark
	// must move with it.
	for id := uint64(100); id < 2000; id++ {
		tb.Put(id, Entry{Q: float64(id)})
	}
	takeAll(tb)
	for id := uint64(100); id < 2000; id += 3 {
		tb.Update(id, func(e *Entry) error { e.Visits = 1; return nil })
	}
	for id := uint64(101); id < 2000; id += 3 {
		tb.Delete(id)
	}
	got = takeAll(tb)
	for id := uint64(100); id < 2000; id++ {
		_, ok := got[id]
		if want := (id-100)%3 == 0; ok != want {
			t.Fatalf("id %d taken %v, want %v", id, ok, want)
		}
	}
}

// TestTakeDirtyConcurrent updates while another goroutine takes: the last
// value taken for each id is its final value (nothing changed is missed).
func TestTakeDirtyConcurrent(t *testing.T) {
	tb := New()
	const ids, rounds = 500, 200
	for id := uint64(0); id < ids; id++ {
		tb.Load(id, Entry{})
	}
	latest := map[uint64]Entry{}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var takes sync.WaitGroup
	takes.Add(1)
	go func() {
		defer takes.Done()
		for {
			for id, e := range takeAll(tb) {
				latest[id] = e
			}
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				for id := uint64(0); id < ids; id++ {
					tb.Update(id, func(e *Entry) error { e.Visits++; return nil })
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	takes.Wait()
	for id, e := range takeAll(tb) {
		latest[id] = e
	}
	for id := uint64(0); id < ids; id++ {
		if latest[id].Visits != 4*rounds {
			t.Fatalf("id %d: last taken visits %d, want %d", id, latest[id].Visits, 4*rounds)
		}
	}
}
