package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// --maxclients 0 passes fitMaxClients unchanged (0 <= fit) and server.New
// then maps 0 to DefaultMaxClients (10000): the descriptor clamp is skipped.
func TestMaxClientsZeroSkipsUlimitClamp(t *testing.T) {
	bin := buildMemrl(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	cmd := exec.Command("sh", "-c", `ulimit -n 400 && exec "$0" serve --dir "$1" --addr "$2" --maxclients 0`, bin, filepath.Join(dir, "data"), addr)
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
		t.Fatalf("CONFIG GET maxclients = %v, %v; want 80 (ulimit -n 400)", got, err)
	}
}
