package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestListenUnix: the socket gets the permissions asked for; a stale
// socket file (nothing listening) is replaced; a live one, or a path that
// is no socket, is refused and left alone; closing removes the file.
func TestListenUnix(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.sock")
	ln, err := listenUnix(path, 0o760)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o760 || st.Mode().Type() != os.ModeSocket {
		t.Fatalf("socket file: %v %v", st.Mode(), err)
	}
	if _, err := listenUnix(path, 0o700); err == nil || !strings.Contains(err.Error(), "another server") {
		t.Fatalf("a live socket taken over: %v", err)
	}
	ln.Close()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("socket file left after close: %v", err)
	}

	// A socket file whose listener is gone (a killed server): bind a
	// socket and close its descriptor without removing the file.
	stale, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	stale.SetUnlinkOnClose(false)
	stale.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("stale socket file: %v", err)
	}
	ln, err = listenUnix(path, 0o700)
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	ln.Close()

	file := filepath.Join(dir, "data")
	os.WriteFile(file, []byte("keep"), 0o600)
	if _, err := listenUnix(file, 0o700); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("a regular file as socket: %v", err)
	}
	if b, _ := os.ReadFile(file); string(b) != "keep" {
		t.Fatalf("the regular file was changed: %q", b)
	}
}

// TestServeUnixSocket: memrl serve --unixsocket answers the same commands
// on the socket as on TCP, with no password (loopback), and removes the
// socket file when it stops.
func TestServeUnixSocket(t *testing.T) {
	bin := buildMemrl(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "memrl.sock")
	addr := freeAddr(t)
	cmd := exec.Command(bin, "serve", "--dir", filepath.Join(dir, "data"), "--addr", addr, "--unixsocket", sock, "--sync", "none")
	logf, _ := os.Create(filepath.Join(dir, "log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			cmd.Process.Signal(os.Interrupt)
			cmd.Wait()
		}
	}()
	ctx := context.Background()
	tcp := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer tcp.Close()
	waitServing(t, cmd, tcp, filepath.Join(dir, "log"))
	ux := redis.NewClient(&redis.Options{Network: "unix", Addr: sock, MaxRetries: -1})
	defer ux.Close()
	if err := ux.Do(ctx, "MEM.CREATE", "c", "DIM", 2).Err(); err != nil {
		t.Fatal(err)
	}
	if err := ux.Do(ctx, "MEM.ADD", "c", "VALUES", 2, 1, 0, "PAYLOAD", "over the socket").Err(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*redis.Client{tcp, ux} {
		got, err := c.Do(ctx, "MEM.RETRIEVE", "c", "VALUES", 2, 1, 0, "K2", 1).Slice()
		if err != nil || len(got) != 1 {
			t.Fatalf("retrieve: %v %v", got, err)
		}
	}
	if got, err := ux.Do(ctx, "CLIENT", "LIST").Text(); err != nil || !strings.Contains(got, "laddr="+sock) {
		t.Fatalf("CLIENT LIST over the socket: %q %v", got, err)
	}
	cmd.Process.Signal(os.Interrupt)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve: %v", err)
	}
	stopped = true
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Fatalf("socket file left after a clean stop: %v", err)
	}
}
