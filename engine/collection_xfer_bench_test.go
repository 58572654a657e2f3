package engine

import (
	"fmt"
	"io"
	"math/rand"
	"testing"

	"github.com/memrl/memrl/vfs"
	"github.com/memrl/memrl/wal"
)

// BenchmarkBeginExport measures the cut of a collection of 100k memories
// (16-d, attributes, a key on every fourth, a tenth rewarded): the time
// BeginExport holds the collection's write lock, which stalls its
// writers (and, in a cluster, the shard's apply loop).
// The "lookups" variant is the copy a checkpoint makes
// (snapshotRowsLocked, each memory's parts looked up by id), done in one
// hold, which BeginExport replaced: the two side by side in one run show
// the ratio on a noisy machine.
func BenchmarkBeginExport(b *testing.B) {
	c := benchXferColl(b, 100_000, 16)
	b.Run("cut", func(b *testing.B) {
		for range b.N {
			e, err := c.BeginExport()
			if err != nil {
				b.Fatal(err)
			}
			e.Close()
		}
	})
	b.Run("lookups", func(b *testing.B) {
		for range b.N {
			c.lockWriter()
			mems := c.snapshotRowsLocked(make([]ckptMemory, 0, len(c.mems)), 0, c.vecs.nrows)
			c.mu.Unlock()
			if len(mems) != 100_000 {
				b.Fatal(len(mems))
			}
		}
	})
}

// BenchmarkExportImport measures a whole export (cut and stream) and
// import of the same collection, in memory (vfs.MemFS).
func BenchmarkExportImport(b *testing.B) {
	c := benchXferColl(b, 100_000, 16)
	b.ResetTimer()
	for i := range b.N {
		e, err := c.BeginExport()
		if err != nil {
			b.Fatal(err)
		}
		pr, pw := io.Pipe()
		go func() {
			_, err := e.WriteTo(pw)
			pw.CloseWithError(err)
		}()
		if _, err := c.db.ImportCollection(fmt.Sprint("copy", i), pr); err != nil {
			b.Fatal(err)
		}
		e.Close()
	}
}

func benchXferColl(b testing.TB, n, dim int) *Collection {
	o := xferOpts(vfs.NewMemFS())
	o.Sync, o.SegmentSize = wal.SyncNone, 0
	db, err := Open("/db", o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	cfg := NewConfig(dim)
	cfg.Index.Kind = IndexFlat
	if err := db.Create("c", cfg); err != nil {
		b.Fatal(err)
	}
	c, _ := db.Collection("c")
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < n; i += 1000 {
		reqs := make([]AddRequest, 0, 1000)
		for j := i; j < min(i+1000, n); j++ {
			v := make([]float32, dim)
			for k := range v {
				v[k] = rng.Float32() + 0.01
			}
			r := AddRequest{Vector: v, Payload: []byte(fmt.Sprint("payload ", j)), Attrs: []byte(fmt.Sprintf(`{"t":%d}`, j%10))}
			if j%4 == 0 {
				r.Key = fmt.Sprint("k", j)
			}
			reqs = append(reqs, r)
		}
		if _, err := c.AddBatch(reqs); err != nil {
			b.Fatal(err)
		}
	}
	for range n / 10 {
		if _, err := c.Reward(rng.Float64(), []uint64{1 + uint64(rng.Intn(n))}, nil); err != nil {
			b.Fatal(err)
		}
	}
	return c
}
