package server

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// redisTool returns the path of a Debian redis-tools binary. A missing tool
// fails the test (CI installs redis-tools) unless MEMRL_NO_REDIS_TOOLS=1
// says explicitly that this machine has none.
func redisTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if os.Getenv("MEMRL_NO_REDIS_TOOLS") == "1" {
		t.Skipf("%s not installed and MEMRL_NO_REDIS_TOOLS=1", name)
	}
	t.Fatalf("%s not found (%v): install Debian's redis-tools (apt-get install redis-tools), or set MEMRL_NO_REDIS_TOOLS=1 to skip this test explicitly", name, err)
	return ""
}

func hostPort(t *testing.T, addr string) (string, string) {
	t.Helper()
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return h, p
}

func runTool(t *testing.T, path string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %q: %v\n%s", path, args, err, out)
	}
	return string(out)
}

func TestRedisCLI(t *testing.T) {
	cli := redisTool(t, "redis-cli")
	ts := startServer(t, Config{}, nil)
	h, p := hostPort(t, ts.addr)
	base := []string{"-h", h, "-p", p}
	if got := runTool(t, cli, append(base, "PING")...); got != "PONG\n" {
		t.Fatalf("PING: %q", got)
	}
	if got := runTool(t, cli, append(base, "ECHO", "hello world")...); got != "hello world\n" {
		t.Fatalf("ECHO: %q", got)
	}
	got := runTool(t, cli, append(base, "INFO")...)
	if !strings.Contains(got, "# Server") || !strings.Contains(got, "memrl_version:"+Version) {
		t.Fatalf("INFO: %q", got)
	}
	// Commands typed on stdin are sent one by one.
	cmd := exec.Command(cli, base...)
	cmd.Stdin = strings.NewReader("PING\nCLIENT SETNAME cli\nCLIENT GETNAME\n")
	out, err := cmd.CombinedOutput()
	if err != nil || string(out) != "PONG\nOK\ncli\n" {
		t.Fatalf("stdin commands: %q, %v", out, err)
	}
}

func TestRedisBenchmark(t *testing.T) {
	bench := redisTool(t, "redis-benchmark")
	ts := startServer(t, Config{}, nil)
	h, p := hostPort(t, ts.addr)
	out := runTool(t, bench, "-h", h, "-p", p, "-t", "ping", "-n", "2000", "-c", "10", "-q")
	// Both the inline and the RESP form of PING must complete; the CONFIG
	// GET probes at start must not produce a warning.
	for _, want := range []string{"PING_INLINE:", "PING_MBULK:", "requests per second"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
	for _, bad := range []string{"WARNING", "Error", "ERR"} {
		if strings.Contains(out, bad) {
			t.Fatalf("output contains %q:\n%s", bad, out)
		}
	}
	// Pipelined (-P) as well.
	out = runTool(t, bench, "-h", h, "-p", p, "-t", "ping", "-n", "2000", "-c", "4", "-P", "50", "-q")
	if !strings.Contains(out, "PING_MBULK:") {
		t.Fatalf("pipelined run:\n%s", out)
	}
}
