package server

import (
	"testing"

	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/vfs"
	"github.com/memrl/memrl/wal"
)

// BenchmarkExecMemGetParallel is BenchmarkExecMemGet on one connection per
// goroutine, every one reading the same collection: what commands of
// different connections pay for sharing that collection's lock and the
// lock table (txlocks.go).
func BenchmarkExecMemGetParallel(b *testing.B) {
	db, err := engine.Open("/db", engine.Options{FS: vfs.NewMemFS(), Sync: wal.SyncNone,
		CheckpointInterval: -1, CheckpointBytes: -1, Logf: func(string, ...any) {}})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if err := db.Create("k", engine.NewConfig(2)); err != nil {
		b.Fatal(err)
	}
	coll, _ := db.Collection("k")
	if _, err := coll.Add(engine.AddRequest{Vector: []float32{1, 2}, ID: 1, HasID: true, Payload: []byte("payload")}); err != nil {
		b.Fatal(err)
	}
	s := mustNew(b, Config{})
	s.RegisterMem(db)
	args := [][]byte{[]byte("MEM.GET"), []byte("k"), []byte("1")}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		c := newConn(s, discardConn{})
		for pb.Next() {
			if !c.exec(args) {
				b.Error("exec ended the connection")
				return
			}
			if c.w.Buffered() > 8<<10 {
				c.w.Flush()
			}
		}
	})
}
