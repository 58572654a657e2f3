package engine

import (
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/memrl/memrl/wal"
)

// Snapshot and rollback cost (bench/README.md "Snapshots and rollback").
// Neither copies a vector, so the dimension hardly matters; the collection
// is FLAT, dimension 16, on the OS file system with SyncAlways (a reply
// waits for its fsyncs). MEMRL_SNAP_BENCH_N sets the sizes (comma
// separated; default 100000).
//
//	go test ./engine -run '^$' -bench 'BenchmarkSnapshot|BenchmarkRollback' -benchtime 5x
//	MEMRL_SNAP_BENCH_N=1000000 go test ./engine -run '^$' -bench ... -benchtime 3x -timeout 30m

func snapBenchSizes() []int {
	s := os.Getenv("MEMRL_SNAP_BENCH_N")
	if s == "" {
		return []int{100_000}
	}
	var out []int
	for _, f := range splitComma(s) {
		n, err := strconv.Atoi(f)
		if err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}

// addRandomBench adds n memories to c in batches of 1,000 (AddBatch), each
// with a vector of dim components uniform in [-1, 1) (rand seed 1) and
// whatever else mk gives memory i.
func addRandomBench(b *testing.B, c *Collection, n, dim int, mk func(i int, v []float32) AddRequest) {
	b.Helper()
	rng := rand.New(rand.NewSource(1))
	batch := make([]AddRequest, 0, 1000)
	for i := 0; i < n; i++ {
		v := make([]float32, dim)
		for j := range v {
			v[j] = rng.Float32()*2 - 1
		}
		if batch = append(batch, mk(i, v)); len(batch) == cap(batch) || i == n-1 {
			if _, err := c.AddBatch(batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}

// snapBenchColl fills a collection of n memories (batches of 1,000 adds,
// with a small payload and attributes), and rewards every tenth.
func snapBenchColl(b *testing.B, n int) (*DB, *Collection) {
	b.Helper()
	db, err := Open(b.TempDir(), Options{Sync: wal.SyncAlways, CheckpointInterval: -1, CheckpointBytes: -1,
		SweepInterval: -1, Logf: func(string, ...any) {}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	cfg := NewConfig(16)
	cfg.Index.Kind = IndexFlat
	if err := db.Create("b", cfg); err != nil {
		b.Fatal(err)
	}
	c, _ := db.Collection("b")
	addRandomBench(b, c, n, 16, func(i int, v []float32) AddRequest {
		return AddRequest{Vector: v, Payload: []byte(fmt.Sprintf("payload-%d", i)),
			Attrs: []byte(fmt.Sprintf(`{"tenant":%d}`, i%100))}
	})
	ids := make([]uint64, 0, 100)
	for id := uint64(1); id <= uint64(n); id += 10 {
		if ids = append(ids, id); len(ids) == cap(ids) || id+10 > uint64(n) {
			if _, err := c.Reward(1, ids, nil); err != nil {
				b.Fatal(err)
			}
			ids = ids[:0]
		}
	}
	return db, c
}

// BenchmarkSnapshot: MEM.SNAPSHOT of the whole collection (copy under the
// write lock, log record, file written and fsynced); each snapshot is
// deleted untimed so the catalog stays small. ms-lock/op is the write-lock
// hold (what the collection's writers and rewards wait for).
func BenchmarkSnapshot(b *testing.B) {
	for _, n := range snapBenchSizes() {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			_, c := snapBenchColl(b, n)
			var lock time.Duration
			snapshotLockHeld = func(d time.Duration) { lock += d }
			defer func() { snapshotLockHeld = nil }()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := c.Snapshot(fmt.Sprint("s", i)); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if _, err := c.DeleteSnapshot(fmt.Sprint("s", i)); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(lock.Microseconds())/float64(b.N)/1000, "ms-lock/op")
		})
	}
}

// BenchmarkRollback: MEM.ROLLBACK after a bad stretch that changed a
// share of the collection: rewards on 10% of the memories, deletes of 5%,
// 5% new memories (so about 20% of the memories change back). The bad
// stretch is applied untimed before each rollback.
func BenchmarkRollback(b *testing.B) {
	for _, n := range snapBenchSizes() {
		b.Run(fmt.Sprintf("n=%d/changed=20%%", n), func(b *testing.B) {
			_, c := snapBenchColl(b, n)
			if err := c.Snapshot("good"); err != nil {
				b.Fatal(err)
			}
			rng := rand.New(rand.NewSource(2))
			changes := 0
			var held time.Duration
			rollbackLockHeld = func(d time.Duration) { held += d }
			defer func() { rollbackLockHeld = nil }()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				ids := make([]uint64, 0, n/10)
				for range n / 10 {
					ids = append(ids, 1+uint64(rng.Intn(n)))
				}
				for j := 0; j < len(ids); j += 100 {
					if _, err := c.Reward(-1, ids[j:min(j+100, len(ids))], nil); err != nil {
						b.Fatal(err)
					}
				}
				for j := 0; j < n/20; j += 1000 {
					del := make([]uint64, 0, 1000)
					for range min(1000, n/20-j) {
						del = append(del, 1+uint64(rng.Intn(n)))
					}
					if _, err := c.Delete(del); err != nil {
						b.Fatal(err)
					}
				}
				batch := make([]AddRequest, 0, 1000)
				for j := 0; j < n/20; j++ {
					batch = append(batch, AddRequest{Vector: []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}})
					if len(batch) == cap(batch) || j == n/20-1 {
						if _, err := c.AddBatch(batch); err != nil {
							b.Fatal(err)
						}
						batch = batch[:0]
					}
				}
				b.StartTimer()
				k, err := c.Rollback("good")
				if err != nil {
					b.Fatal(err)
				}
				changes += k
			}
			b.ReportMetric(float64(changes)/float64(b.N), "changes/op")
			b.ReportMetric(float64(held.Microseconds())/float64(b.N)/1000, "ms-lock/op")
		})
	}
}
