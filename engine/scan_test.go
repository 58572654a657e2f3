package engine

import (
	"bytes"
	"errors"
	"math/rand"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/memrl/memrl/wal"
)

// scanAll scans c to the end with pages of count and returns the ids in
// the order returned.
func scanAll(t *testing.T, c *Collection, opt ScanOptions) []uint64 {
	t.Helper()
	var ids []uint64
	cursor := uint64(0)
	for pages := 0; ; pages++ {
		page, next, err := c.Scan(cursor, opt)
		if err != nil {
			t.Fatal(err)
		}
		for _, mi := range page {
			ids = append(ids, mi.ID)
		}
		if next == 0 {
			return ids
		}
		if next <= cursor || pages > 1<<20 {
			t.Fatalf("cursor went from %d to %d", cursor, next)
		}
		cursor = next
	}
}

// TestScanIDOrder: pages of every size return every live id once, in
// increasing order, for sparse ids spread over the whole id space (0 and
// MaxID included) with deleted ids among them, before and after a restart
// (from the log, then from a checkpoint).
func TestScanIDOrder(t *testing.T) {
	db, dir := openTemp(t, Options{Sync: wal.SyncNone})
	c := mustColl(t, db, "c", NewConfig(2))
	rng := rand.New(rand.NewSource(1))
	live := map[uint64]bool{}
	for _, id := range []uint64{0, 1, 2, 65535, 65536, 1 << 32, 1<<32 + 1, MaxID} {
		live[id] = true
	}
	for len(live) < 3000 {
		id := uint64(rng.Int63n(1 << 20))
		if rng.Intn(10) == 0 {
			id = uint64(rng.Int63()) // anywhere up to MaxID
		}
		live[id] = true
	}
	var reqs []AddRequest
	for id := range live {
		reqs = append(reqs, AddRequest{Vector: []float32{1, float32(id % 7)}, ID: id, HasID: true})
	}
	if _, err := c.AddBatch(reqs); err != nil {
		t.Fatal(err)
	}
	var del []uint64
	for id := range live {
		if rng.Intn(3) == 0 {
			del = append(del, id)
			delete(live, id)
		}
	}
	if _, err := c.Delete(del); err != nil {
		t.Fatal(err)
	}
	want := make([]uint64, 0, len(live))
	for id := range live {
		want = append(want, id)
	}
	slices.Sort(want)
	check := func(c *Collection) {
		t.Helper()
		for _, count := range []int{1, 2, 7, 10, 999, MaxScanCount} {
			if got := scanAll(t, c, ScanOptions{Count: count}); !slices.Equal(got, want) {
				t.Fatalf("COUNT %d: scanned %d ids, want %d (first diff near %v)", count, len(got), len(want), firstDiff(got, want))
			}
		}
		if n, _ := c.Count(); n != len(want) {
			t.Fatalf("Count %d, want %d", n, len(want))
		}
	}
	check(c)
	db.Close()
	db2, err := Open(dir, Options{Sync: wal.SyncNone, Logf: t.Logf}) // replays the log
	if err != nil {
		t.Fatal(err)
	}
	c2, _ := db2.Collection("c")
	check(c2)
	if err := db2.CheckpointFull(); err != nil {
		t.Fatal(err)
	}
	db2.Close()
	db3, err := Open(dir, Options{Sync: wal.SyncNone, Logf: t.Logf}) // loads the checkpoint
	if err != nil {
		t.Fatal(err)
	}
	defer db3.Close()
	c3, _ := db3.Collection("c")
	check(c3)
}

func firstDiff(a, b []uint64) [2]uint64 {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return [2]uint64{a[i], b[i]}
		}
	}
	return [2]uint64{}
}

// TestScanContents: a page holds the payload and the vector (as stored:
// normalised for COSINE) only when asked for; MaxBytes ends a page early
// but never leaves it empty; COUNT out of range is refused.
func TestScanContents(t *testing.T) {
	db, _ := openTemp(t, Options{Sync: wal.SyncNone})
	c := mustColl(t, db, "c", NewConfig(2)) // COSINE
	big := bytes.Repeat([]byte{'p'}, 1000)
	for i := uint64(1); i <= 5; i++ {
		if _, err := c.Add(AddRequest{Vector: []float32{3, 4}, ID: i, HasID: true, Payload: big}); err != nil {
			t.Fatal(err)
		}
	}
	page, next, err := c.Scan(0, ScanOptions{Count: 10})
	if err != nil || len(page) != 5 || next != 0 {
		t.Fatalf("plain page: %d memories, next %d, %v", len(page), next, err)
	}
	if page[0].Payload != nil || page[0].Vector != nil {
		t.Fatalf("plain page holds payload %d bytes, vector %v", len(page[0].Payload), page[0].Vector)
	}
	page, _, err = c.Scan(0, ScanOptions{Count: 10, WithPayload: true, WithVector: true})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(page[4].Payload, big) || !slices.Equal(page[4].Vector, []float32{0.6, 0.8}) {
		t.Fatalf("full page: payload %d bytes, vector %v", len(page[4].Payload), page[4].Vector)
	}
	page, next, err = c.Scan(0, ScanOptions{Count: 10, WithPayload: true, MaxBytes: 1500})
	if err != nil || len(page) != 2 || next != 3 {
		t.Fatalf("MaxBytes 1500: %d memories, next %d, %v; want 2 and 3", len(page), next, err)
	}
	page, next, err = c.Scan(3, ScanOptions{Count: 10, WithPayload: true, MaxBytes: 1})
	if err != nil || len(page) != 1 || page[0].ID != 3 || next != 4 {
		t.Fatalf("MaxBytes 1 from 3: %d memories, next %d, %v", len(page), next, err)
	}
	for _, n := range []int{0, -1, MaxScanCount + 1} {
		if _, _, err := c.Scan(0, ScanOptions{Count: n}); !errors.Is(err, ErrBadParam) {
			t.Errorf("COUNT %d: %v, want ErrBadParam", n, err)
		}
	}
	if page, next, err := c.Scan(6, ScanOptions{Count: 10}); err != nil || len(page) != 0 || next != 0 {
		t.Fatalf("past the end: %d, %d, %v", len(page), next, err)
	}
}

// TestScanExactlyOnceUnderWrites: while writers add and delete memories
// (singly and in batches), a scan returns every memory that was live for
// the whole scan exactly once, and no id twice.
func TestScanExactlyOnceUnderWrites(t *testing.T) {
	db, _ := openTemp(t, Options{Sync: wal.SyncNone})
	c := mustColl(t, db, "c", NewConfig(2))
	// Stable memories: ids 1..1000 step 2, never deleted. Churned ones:
	// the even ids, added and deleted meanwhile.
	var stable []AddRequest
	for id := uint64(1); id < 2000; id += 2 {
		stable = append(stable, AddRequest{Vector: []float32{1, 2}, ID: id, HasID: true})
	}
	if _, err := c.AddBatch(stable); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(w)))
			for !stop.Load() {
				id := uint64(rng.Intn(1000)) * 2 // even: never a stable id
				if rng.Intn(2) == 0 {
					var batch []AddRequest
					for k := uint64(0); k < 5; k++ {
						batch = append(batch, AddRequest{Vector: []float32{2, 1}, ID: id + 2*k, HasID: true})
					}
					c.AddBatch(batch) // may fail: an id is live
				} else {
					c.Delete([]uint64{id, id + 2, id + 4})
				}
			}
		}(w)
	}
	for round := 0; round < 20; round++ {
		seen := map[uint64]int{}
		for _, id := range scanAll(t, c, ScanOptions{Count: 1 + round*3}) {
			seen[id]++
			if seen[id] > 1 {
				t.Fatalf("round %d: id %d returned twice", round, id)
			}
		}
		for _, r := range stable {
			if seen[r.ID] != 1 {
				t.Fatalf("round %d: stable id %d returned %d times", round, r.ID, seen[r.ID])
			}
		}
	}
	stop.Store(true)
	wg.Wait()
}
