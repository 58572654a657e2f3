package engine

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/memrl/memrl/wal"
)

// benchColl fills a FLAT collection of n random vectors of dim with small
// payloads, on the OS file system.
func benchColl(b *testing.B, n, dim int) (*Collection, [][]float32) {
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
	vecs := make([][]float32, 64)
	for i := 0; i < n; i++ {
		v := make([]float32, dim)
		for j := range v {
			v[j] = rng.Float32()*2 - 1
		}
		if i < len(vecs) {
			vecs[i] = v
		}
		if _, err := c.Add(AddRequest{Vector: v, Payload: []byte(fmt.Sprintf("payload-%d", i))}); err != nil {
			b.Fatal(err)
		}
	}
	return c, vecs
}

// BenchmarkRetrieve measures an exact two-phase retrieval, with and
// without payloads: what the per-read checks (the K1 candidates' rows, the
// returned payloads) add to.
func BenchmarkRetrieve(b *testing.B) {
	for _, tc := range []struct {
		n, dim, k1  int
		withPayload bool
	}{{20000, 128, 10, false}, {20000, 128, 100, true}, {5000, 768, 100, true}} {
		b.Run(fmt.Sprintf("n=%d/dim=%d/k1=%d/payload=%v", tc.n, tc.dim, tc.k1, tc.withPayload), func(b *testing.B) {
			c, qs := benchColl(b, tc.n, tc.dim)
			opt := NewRetrieveOptions()
			opt.K1, opt.K2, opt.WithPayload = tc.k1, 10, tc.withPayload
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := c.Retrieve(qs[i%len(qs)], opt); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAdd measures an add (SyncNone: the file writes, not the fsync).
func BenchmarkAdd(b *testing.B) {
	c, _ := benchColl(b, 0, 128)
	v := make([]float32, 128)
	v[0] = 1
	p := make([]byte, 200)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.Add(AddRequest{Vector: v, Payload: p}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAddWithAttrsKey measures an add with attributes (about 80
// bytes of JSON to validate and compact), a key and a TTL, against
// BenchmarkAdd's plain one.
func BenchmarkAddWithAttrsKey(b *testing.B) {
	c, _ := benchColl(b, 0, 128)
	v := make([]float32, 128)
	v[0] = 1
	p := make([]byte, 200)
	attrs := []byte(`{"user_id": "u-1234", "session_id": "s-99", "status": "ok", "tags": ["plan", "tool"], "step": 3}`)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		key := fmt.Sprintf("3f2a9c1e-0000-4000-8000-%012d", i) // a UUID's shape
		if _, err := c.Add(AddRequest{Vector: v, Payload: p, Attrs: attrs, Key: key, TTL: time.Hour}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSetAttrs measures MEM.SETATTR's engine side on one memory.
func BenchmarkSetAttrs(b *testing.B) {
	c, _ := benchColl(b, 1, 128)
	attrs := []byte(`{"user_id": "u-1234", "status": "done", "q_updated_at": 1767225600}`)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := c.SetAttrs(ByID(1), attrs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRowSum measures the check of one vector row: Retrieve pays it
// K1 times, the exact scan it follows reads every row.
func BenchmarkRowSum(b *testing.B) {
	for _, dim := range []int{128, 768} {
		b.Run(fmt.Sprintf("dim=%d", dim), func(b *testing.B) {
			row := make([]float32, dim)
			b.SetBytes(int64(dim * 4))
			for i := 0; i < b.N; i++ {
				rowSum(uint32(i), row)
			}
		})
	}
}

// BenchmarkExactScanRows measures the exact scan per row, for comparison
// with BenchmarkRowSum.
func BenchmarkExactScanRows(b *testing.B) {
	for _, dim := range []int{128, 768} {
		b.Run(fmt.Sprintf("dim=%d", dim), func(b *testing.B) {
			const n = 4096
			rows := make([]float32, n*dim)
			for i := range rows {
				rows[i] = float32(i%7) - 3
			}
			q := rows[:dim]
			dead := roaring.New()
			b.SetBytes(int64(n * dim * 4))
			for i := 0; i < b.N; i++ {
				exactSearch(rows, dim, L2, dead, q, SearchOptions{K1: 10})
			}
		})
	}
}

// BenchmarkExactAllowed compares, for allowed sets of growing share, the
// exact scan that iterates the allowed rows (exactSearchAllowed) with the
// batched full scan that checks Allow per heap entry (exactSearch), on
// 128 MB of vectors (past the caches, like a large collection): the data
// behind iterateAllowed's constants.
func BenchmarkExactAllowed(b *testing.B) {
	const n, dim = 262144, 128
	rng := rand.New(rand.NewSource(3))
	rows := make([]float32, n*dim)
	for i := range rows {
		rows[i] = rng.Float32()
	}
	q := rows[:dim]
	dead := roaring.New()
	for _, share := range []float64{0.01, 0.05, 0.1, 0.2, 0.4} {
		allow := roaring.New()
		for r := range n {
			if rng.Float64() < share {
				allow.Add(uint32(r))
			}
		}
		opt := SearchOptions{K1: 10, Allow: allow}
		b.Run(fmt.Sprintf("share=%g/iterate", share), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				exactSearchAllowed(rows, dim, L2, dead, allow, q, opt)
			}
		})
		b.Run(fmt.Sprintf("share=%g/fullscan", share), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				exactSearch(rows, dim, L2, dead, q, opt)
			}
		})
	}
}
