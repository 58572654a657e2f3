package engine

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/memrl/memrl/engine/filter"
	"github.com/memrl/memrl/wal"
)

// benchAttrsColl fills a FLAT collection of n random vectors of dim with
// attributes {"user":"u<i%100>","n":<i%1000>} (no field indexed).
func benchAttrsColl(b *testing.B, n, dim int) (*Collection, [][]float32) {
	b.Helper()
	db, err := Open(b.TempDir(), Options{Sync: wal.SyncNone, CheckpointInterval: -1, CheckpointBytes: -1, Logf: func(string, ...any) {}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	cfg := NewConfig(dim)
	cfg.Index.Kind = IndexFlat
	if err := db.Create("b", cfg); err != nil {
		b.Fatal(err)
	}
	c, _ := db.Collection("b")
	rng := rand.New(rand.NewSource(1))
	qs := make([][]float32, 64)
	reqs := make([]AddRequest, 0, 1000)
	for i := 0; i < n; i++ {
		v := make([]float32, dim)
		for j := range v {
			v[j] = rng.Float32()*2 - 1
		}
		if i < len(qs) {
			qs[i] = v
		}
		reqs = append(reqs, AddRequest{Vector: v, Attrs: fmt.Appendf(nil, `{"user":"u%d","n":%d}`, i%100, i%1000)})
		if len(reqs) == cap(reqs) || i == n-1 {
			if _, err := c.AddBatch(reqs); err != nil {
				b.Fatal(err)
			}
			reqs = reqs[:0]
		}
	}
	return c, qs
}

// BenchmarkFilteredReads measures the reads that work in steps with cheap
// filters (steps.go): a retrieval with a filter matching 50% (lazy: a few
// evaluations) and 1% (many), a count and a scan page, on 20k memories.
func BenchmarkFilteredReads(b *testing.B) {
	c, qs := benchAttrsColl(b, 20000, 128)
	half, _ := filter.Parse(`.n < 500`)
	one, _ := filter.Parse(`.user == "u7"`)
	for _, tc := range []struct {
		name string
		e    *filter.Expr
	}{{"half", half}, {"one", one}} {
		b.Run("retrieve/"+tc.name, func(b *testing.B) {
			opt := NewRetrieveOptions()
			opt.Filter = tc.e
			for i := 0; i < b.N; i++ {
				if _, err := c.Retrieve(qs[i%len(qs)], opt); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("count/"+tc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := c.CountFilter(tc.e); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("scan/"+tc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, _, err := c.Scan(0, ScanOptions{Count: 100, Filter: tc.e}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
