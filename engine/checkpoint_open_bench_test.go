package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/memrl/memrl/wal"
)

// BenchmarkOpenCheckpoint1M: Open of a database whose one collection of a
// million memories (DIM 8, FLAT; every memory with a payload, a third
// with attributes and a key) is all in its checkpoint, and, apart, the
// decoding of that checkpoint file alone (decodeCheckpoint: what Open
// spends on the checkpoint's collections and memories). The database is
// built once, untimed (some tens of seconds); run with -benchtime=3x.
func BenchmarkOpenCheckpoint1M(b *testing.B) {
	const n = 1_000_000
	dir := b.TempDir()
	opts := Options{Sync: wal.SyncNone, CheckpointInterval: -1, CheckpointBytes: -1, Logf: func(string, ...any) {}}
	db, err := Open(dir, opts)
	if err != nil {
		b.Fatal(err)
	}
	cfg := NewConfig(8)
	cfg.Index.Kind = IndexFlat
	if err := db.Create("b", cfg); err != nil {
		b.Fatal(err)
	}
	c, _ := db.Collection("b")
	addRandomBench(b, c, n, 8, func(i int, v []float32) AddRequest {
		r := AddRequest{Vector: v, Payload: []byte(fmt.Sprintf("payload-%d", i))}
		if i%3 == 0 {
			r.Attrs = []byte(fmt.Sprintf(`{"tenant":%d}`, i%100))
			r.Key = fmt.Sprintf("k%d", i)
		}
		return r
	})
	if err := db.Checkpoint(); err != nil {
		b.Fatal(err)
	}
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	b.Run("open", func(b *testing.B) {
		for b.Loop() {
			db, err := Open(dir, opts)
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if err := db.Close(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	})
	b.Run("decode", func(b *testing.B) {
		data, err := os.ReadFile(filepath.Join(dir, ckptName))
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			cp, err := decodeCheckpoint(data)
			if err != nil || len(cp.colls) != 1 || len(cp.colls[0].mems) != n {
				b.Fatalf("%v, %d collections", err, len(cp.colls))
			}
		}
	})
}
