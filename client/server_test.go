package client_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memrl/memrl/client"
	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/server"
	"github.com/memrl/memrl/wal"
)

// testAddr is the in-process server TestMain starts; the examples and most
// tests use it, each with collections of its own.
var testAddr string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "memrl-client-test")
	if err != nil {
		panic(err)
	}
	addr, stop, err := startServer(dir, server.Config{})
	if err != nil {
		panic(err)
	}
	testAddr = addr
	code := m.Run()
	stop()
	os.RemoveAll(dir)
	os.Exit(code)
}

// startServer serves a database in dir on a free loopback port with cfg
// and returns its address and a function that shuts it down.
func startServer(dir string, cfg server.Config) (string, func(), error) {
	db, err := engine.Open(dir, engine.Options{Sync: wal.SyncNone, CheckpointInterval: -1})
	if err != nil {
		return "", nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s, err := server.New(cfg)
	if err != nil {
		db.Close()
		return "", nil, err
	}
	s.RegisterMem(db)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		db.Close()
		return "", nil, err
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Shutdown(ctx)
		<-done
		db.Close()
	}
	return ln.Addr().String(), stop, nil
}

// startTestServer is startServer for one test, with cleanup.
func startTestServer(t *testing.T, cfg server.Config) string {
	t.Helper()
	addr, stop, err := startServer(t.TempDir(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return addr
}

// newClient connects to addr (the shared server if "").
func newClient(t testing.TB, addr string) *client.Client {
	t.Helper()
	if addr == "" {
		addr = testAddr
	}
	c, err := client.New(client.Options{Addr: addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

var collSeq atomic.Int64

// newColl creates a collection with a name no other test uses.
func newColl(t *testing.T, c *client.Client, dim int, opt *client.CreateOptions) string {
	t.Helper()
	name := fmt.Sprintf("t%d", collSeq.Add(1))
	if err := c.Create(context.Background(), name, dim, opt); err != nil {
		t.Fatal(err)
	}
	return name
}
