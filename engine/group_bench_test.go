package engine

import (
	"fmt"
	"testing"

	"github.com/memrl/memrl/vfs"
	"github.com/memrl/memrl/wal"
)

// BenchmarkTxReplace is the cost of an atomic group: one op is a
// transaction deleting and re-adding 100 keyed memories (dim 8), as EXEC
// runs it, with and without a group around it (the group wraps each
// record, copying it once, and logs a commit record).
func BenchmarkTxReplace(b *testing.B) {
	for _, grouped := range []bool{false, true} {
		b.Run(fmt.Sprint("grouped=", grouped), func(b *testing.B) {
			db, err := Open("/db", Options{FS: vfs.NewMemFS(), Sync: wal.SyncNone, CheckpointInterval: -1,
				CheckpointBytes: -1, CompactShare: -1, Logf: func(string, ...any) {}})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			cfg := NewConfig(8)
			if err := db.Create("c", cfg); err != nil {
				b.Fatal(err)
			}
			c, _ := db.Collection("c")
			vec := []float32{1, 2, 3, 4, 5, 6, 7, 8}
			keys := make([]string, 100)
			for i := range keys {
				keys[i] = fmt.Sprint("k", i)
				if _, err := c.Add(AddRequest{Vector: vec, Key: keys[i]}); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for n := 0; n < b.N; n++ {
				var g *Group
				if grouped {
					g = db.BeginGroup([]string{"c"})
				}
				var last Ticket
				for _, k := range keys {
					if _, _, err := c.DeleteRefsDeferred([]Ref{ByKey(k)}); err != nil {
						b.Fatal(err)
					}
					_, t, err := c.AddDeferred(AddRequest{Vector: vec, Payload: []byte("payload"), Key: k})
					if err != nil {
						b.Fatal(err)
					}
					last = t
				}
				if g != nil {
					t, err := g.Commit()
					if err != nil {
						b.Fatal(err)
					}
					last = max(last, t)
				}
				if err := db.WaitDurable(last); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
