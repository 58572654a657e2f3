package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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
// lowered to what the database leaves (400 - 256 - 64 = 80) and said. An
// explicit --maxclients 0 means the default and is fitted the same way.
func TestServeFitsMaxClientsToUlimit(t *testing.T) {
	bin := buildMemrl(t)
	for _, extra := range []string{"", "--maxclients 0"} {
		dir := t.TempDir()
		addr := freeAddr(t)
		logPath := filepath.Join(dir, "log")
		cmd := exec.Command("sh", "-c", `ulimit -n 400 && exec "$0" serve --dir "$1" --addr "$2" `+extra+` 2>"$3"`,
			bin, filepath.Join(dir, "data"), addr, logPath)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		stop := func() {
			cmd.Process.Signal(os.Interrupt)
			cmd.Wait()
		}
		logged := func() string { b, _ := os.ReadFile(logPath); return string(b) }
		rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
		ctx := context.Background()
		waitServing(t, cmd, rdb, logPath)
		got, err := rdb.ConfigGet(ctx, "maxclients").Result()
		rdb.Close()
		stop()
		if err != nil || got["maxclients"] != "80" {
			t.Fatalf("%q: CONFIG GET maxclients = %v, %v; want 80", extra, got, err)
		}
		if !strings.Contains(logged(), "lowered to 80") {
			t.Fatalf("%q: no warning logged:\n%s", extra, logged())
		}
	}
}
