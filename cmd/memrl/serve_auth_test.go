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

// TestServeWithPassword runs `memrl serve` with the password in
// MEMRL_PASSWORD (so ps does not show it) and a read-only user, and drives
// it with redis-cli and go-redis as an operator would.
func TestServeWithPassword(t *testing.T) {
	bin := buildMemrl(t)
	dir := t.TempDir()
	users := filepath.Join(dir, "users")
	os.WriteFile(users, []byte("viewer:look:readonly\n"), 0o600)
	addr := freeAddr(t)
	cmd := exec.Command(bin, "serve", "--dir", filepath.Join(dir, "data"), "--addr", addr, "--users-file", users, "--maxclients", "3")
	cmd.Env = append(os.Environ(), passwordEnv+"=s3cret")
	logf, _ := os.Create(filepath.Join(dir, "log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}()
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: addr, Password: "s3cret", MaxRetries: -1})
	defer admin.Close()
	waitServing(t, cmd, admin, filepath.Join(dir, "log"))
	if err := admin.Do(ctx, "MEM.CREATE", "c", "DIM", 2).Err(); err != nil {
		t.Fatal(err)
	}

	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatalf("redis-cli: %v (scripts/test.sh installs redis-tools)", err)
	}
	h, p := splitAddr(t, addr)
	run := func(auth string, args ...string) string {
		c := exec.Command(cli, append([]string{"-h", h, "-p", p}, args...)...)
		c.Env = append(os.Environ(), "REDISCLI_AUTH="+auth)
		if auth == "" {
			c.Env = os.Environ()
		}
		out, _ := c.CombinedOutput()
		return strings.TrimSpace(string(out))
	}
	if got := run("", "MEM.LIST"); !strings.Contains(got, "NOAUTH") {
		t.Fatalf("MEM.LIST without a password: %q", got)
	}
	if got := run("wrong", "MEM.LIST"); !strings.Contains(got, "WRONGPASS") {
		t.Fatalf("MEM.LIST with a wrong password: %q", got)
	}
	if got := run("s3cret", "MEM.LIST"); got != "c" {
		t.Fatalf("MEM.LIST with the password: %q", got)
	}
	if got := run("look", "--user", "viewer", "MEM.ADD", "c", "VALUES", "2", "1", "0"); !strings.Contains(got, "NOPERM") {
		t.Fatalf("MEM.ADD as viewer: %q", got)
	}
	viewer := redis.NewClient(&redis.Options{Addr: addr, Username: "viewer", Password: "look", MaxRetries: -1})
	defer viewer.Close()
	if got, err := viewer.Do(ctx, "MEM.LIST").StringSlice(); err != nil || len(got) != 1 {
		t.Fatalf("MEM.LIST as viewer: %v %v", got, err)
	}
	if err := viewer.Do(ctx, "MEM.DROP", "c").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Fatalf("MEM.DROP as viewer: %v", err)
	}
	// --maxclients 3: admin and viewer hold two; a third fits, a fourth
	// is refused.
	held := redis.NewClient(&redis.Options{Addr: addr, Password: "s3cret", MaxRetries: -1, PoolSize: 1})
	defer held.Close()
	if err := held.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if got := run("s3cret", "PING"); !strings.Contains(got, "max number of clients reached") {
		t.Fatalf("a fourth client: %q", got)
	}
}

func splitAddr(t *testing.T, addr string) (string, string) {
	i := strings.LastIndexByte(addr, ':')
	return addr[:i], addr[i+1:]
}
