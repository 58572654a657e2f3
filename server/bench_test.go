package server

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// repeatReader serves the same bytes forever, like a client that keeps
// pipelining one command.
type repeatReader struct {
	data []byte
	off  int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.data[r.off:])
		n += c
		r.off = (r.off + c) % len(r.data)
	}
	return n, nil
}

func benchReader(b *testing.B, cmd string) {
	rd := NewReader(&repeatReader{data: []byte(cmd)}, Limits{})
	b.SetBytes(int64(len(cmd)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := rd.ReadCommand(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReaderRESP(b *testing.B) {
	benchReader(b, "*3\r\n$7\r\nMEM.GET\r\n$4\r\ncoll\r\n$2\r\n42\r\n")
}

func BenchmarkReaderInline(b *testing.B) {
	benchReader(b, "MEM.GET coll 42\r\n")
}

func BenchmarkReaderVector768(b *testing.B) {
	// MEM.ADD with a 768-dim FP32 vector and a 1 KiB payload.
	vec := strings.Repeat("v", 768*4)
	pay := strings.Repeat("p", 1024)
	benchReader(b, "*5\r\n$7\r\nMEM.ADD\r\n$4\r\ncoll\r\n$3\r\nVEC\r\n$3072\r\n"+vec+"\r\n$1024\r\n"+pay+"\r\n")
}

func BenchmarkWriterMixed(b *testing.B) {
	w := NewWriter(io.Discard)
	payload := bytes.Repeat([]byte("x"), 64)
	b.ReportAllocs()
	for b.Loop() {
		w.WriteArrayHeader(3)
		w.WriteInt(12345)
		w.WriteFloat32(0.123)
		w.WriteBulk(payload)
	}
	w.Flush()
}

// BenchmarkServerPipeline measures end-to-end throughput of pipelined PINGs
// over loopback, 100 per round trip.
func BenchmarkServerPipeline(b *testing.B) {
	ts := startServer(b, Config{}, nil)
	c := redis.NewClient(&redis.Options{Addr: ts.addr})
	defer c.Close()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		p := c.Pipeline()
		for range 100 {
			p.Ping(ctx)
		}
		if _, err := p.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "cmds/s")
}

// BenchmarkServerRoundTrip measures one PING per round trip on a raw
// connection (latency-bound).
func BenchmarkServerRoundTrip(b *testing.B) {
	ts := startServer(b, Config{}, nil)
	c := ts.rawConn(b)
	br := bufio.NewReader(c)
	ping := []byte("*1\r\n$4\r\nPING\r\n")
	for b.Loop() {
		c.Write(ping)
		if _, err := br.ReadSlice('\n'); err != nil {
			b.Fatal(err)
		}
	}
}

// discardConn is a net.Conn whose writes vanish, for benchmarks of the
// command path without a socket.
type discardConn struct{ net.Conn }

func (discardConn) Write(p []byte) (int, error) { return len(p), nil }
func (discardConn) RemoteAddr() net.Addr        { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }

// Deadlines are no-ops: nothing blocks.
func (discardConn) SetReadDeadline(time.Time) error  { return nil }
func (discardConn) SetWriteDeadline(time.Time) error { return nil }

// BenchmarkExecPing measures the server's per-command path (lookup,
// bookkeeping, handler, reply into the buffer) for PING, with no socket:
// the figure to watch for the cost of per-command statistics.
func BenchmarkExecPing(b *testing.B) {
	s := mustNew(b, Config{})
	c := newConn(s, discardConn{})
	args := [][]byte{[]byte("PING")}
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
