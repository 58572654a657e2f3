package server

import "testing"

// BenchmarkExecMemGetParallel is BenchmarkExecMemGet on one connection per
// goroutine, every one reading the same collection: what commands of
// different connections pay for sharing that collection's lock and the
// lock table (txlocks.go).
func BenchmarkExecMemGetParallel(b *testing.B) {
	s := benchMemServer(b)
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
