package server

import (
	"testing"

	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/vfs"
	"github.com/memrl/memrl/wal"
)

// BenchmarkExecMemGet measures the server's per-command path for MEM.GET
// of one memory with a small payload, with no socket: with
// BenchmarkExecPing, the figure to watch for the cost of what every command
// pays on its way to its handler (the transaction lock, tx.go, included).
func BenchmarkExecMemGet(b *testing.B) {
	s := benchMemServer(b)
	c := newConn(s, discardConn{})
	args := [][]byte{[]byte("MEM.GET"), []byte("k"), []byte("1")}
	b.ReportAllocs()
	for b.Loop() {
		if !c.exec(args) {
			b.Fatal("exec ended the connection")
		}
		if c.w.Buffered() > 8<<10 {
			c.w.Flush()
		}
	}
}

// BenchmarkExecPingParallel is BenchmarkExecPing on one connection per
// goroutine (GOMAXPROCS of them): what commands of different connections
// pay for sharing the transaction lock (tx.go).
func BenchmarkExecPingParallel(b *testing.B) {
	s := mustNew(b, Config{})
	args := [][]byte{[]byte("PING")}
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

// benchMemServer is a server over an in-memory database holding one
// collection "k" with memory 1 (a small payload), for the MEM.GET
// benchmarks; the database is closed when b ends.
func benchMemServer(b *testing.B) *Server {
	db, err := engine.Open("/db", engine.Options{FS: vfs.NewMemFS(), Sync: wal.SyncNone,
		CheckpointInterval: -1, CheckpointBytes: -1, Logf: func(string, ...any) {}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	if err := db.Create("k", engine.NewConfig(2)); err != nil {
		b.Fatal(err)
	}
	coll, _ := db.Collection("k")
	if _, err := coll.Add(engine.AddRequest{Vector: []float32{1, 2}, ID: 1, HasID: true, Payload: []byte("payload")}); err != nil {
		b.Fatal(err)
	}
	s := mustNew(b, Config{})
	s.RegisterMem(db)
	return s
}
