package server

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// testServer is a Server on a loopback port with its Serve error captured.
type testServer struct {
	*Server
	addr     string
	serveErr chan error
	logBuf   *syncBuffer
	writes   *atomic.Int64 // Write calls on accepted connections
}

type syncBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// countingListener wraps accepted connections to count Write calls.
type countingListener struct {
	net.Listener
	writes *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{c, l.writes}, nil
}

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// NetConn exposes the socket, as tls.Conn does, so that the server can
// watch it for a hang-up during a command (busy.go).
func (c countingConn) NetConn() net.Conn { return c.Conn }

// startServer serves cfg on 127.0.0.1:0 and shuts it down at test end.
// register runs before Serve.
func startServer(t testing.TB, cfg Config, register func(*Server)) *testServer {
	t.Helper()
	ts := &testServer{serveErr: make(chan error, 1), logBuf: &syncBuffer{}, writes: new(atomic.Int64)}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(ts.logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	ts.Server = mustNew(t, cfg)
	if register != nil {
		register(ts.Server)
	}
	if testReplicator != nil { // replicate_test.go
		ts.SetReplicator(testReplicator(ts.Server))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts.addr = ln.Addr().String()
	go func() { ts.serveErr <- ts.Serve(countingListener{ln, ts.writes}) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := ts.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-ts.serveErr; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
	})
	return ts
}

func (ts *testServer) client(t *testing.T) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: ts.addr, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return c
}

// rawConn dials the server for byte-level tests.
func (ts *testServer) rawConn(t testing.TB) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", ts.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	t.Cleanup(func() { c.Close() })
	return c
}

// readUntilEOF returns everything the server sends until it closes.
func readUntilEOF(t *testing.T, c net.Conn) string {
	t.Helper()
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("reading until close: %v (got %q)", err, b)
	}
	return string(b)
}

// mustNew is New for a configuration the test knows to be valid.
func mustNew(t testing.TB, cfg Config) *Server {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}
