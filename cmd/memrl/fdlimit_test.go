package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestFitMaxClients(t *testing.T) {
	if n, warn, err := fitMaxClients(10000, 256, 1<<20); n != 10000 || warn != "" || err != nil {
		t.Fatalf("a large limit: %d %q %v", n, warn, err)
	}
	n, warn, err := fitMaxClients(10000, 256, 1024)
	if err != nil || n != 1024-256-fdReserve || !strings.Contains(warn, "lowered to 704") {
		t.Fatalf("ulimit -n 1024: %d %q %v", n, warn, err)
	}
	if _, _, err := fitMaxClients(10, 256, 300); err == nil {
		t.Fatal("a limit below the database's share was accepted")
	}
}

// TestServeFitsMaxClientsToUlimit runs `memrl serve` under ulimit -n 400:
// the default 10,000 clients cannot all have a descriptor, so the limit is
// lowered to what the database leaves (400 - 256 - 64 = 80) and said.
func TestServeFitsMaxClientsToUlimit(t *testing.T) {
	bin := buildMemrl(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	cmd := exec.Command("sh", "-c", `ulimit -n 400 && exec "$0" serve --dir "$1" --addr "$2"`, bin, filepath.Join(dir, "data"), addr)
	var logb syncBuffer
	cmd.Stdout, cmd.Stderr = &logb, &logb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}()
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer rdb.Close()
	ctx := context.Background()
	for i := 0; rdb.Ping(ctx).Err() != nil; i++ {
		if i > 500 {
			t.Fatalf("memrl serve did not start:\n%s", logb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	got, err := rdb.ConfigGet(ctx, "maxclients").Result()
	if err != nil || got["maxclients"] != "80" {
		t.Fatalf("CONFIG GET maxclients = %v, %v; want 80", got, err)
	}
	if !strings.Contains(logb.String(), "lowered to 80") {
		t.Fatalf("no warning logged:\n%s", logb.String())
	}
}

// syncBuffer is a bytes.Buffer safe for a child's two output streams.
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
