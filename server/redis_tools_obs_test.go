package server

import (
	"strings"
	"testing"
)

// TestRedisCLIObservability: redis-cli shows SLOWLOG entries and the
// commandstats/latencystats sections as it does Redis's.
func TestRedisCLIObservability(t *testing.T) {
	cli := redisTool(t, "redis-cli")
	ts := startServer(t, Config{}, nil)
	ts.SetSlowlog(0, 10)
	h, p := hostPort(t, ts.addr)
	base := []string{"-h", h, "-p", p}
	runTool(t, cli, append(base, "ECHO", "slow-marker")...)
	got := runTool(t, cli, append(base, "SLOWLOG", "GET", "-1")...)
	if !strings.Contains(got, "slow-marker") || !strings.Contains(got, "ECHO") {
		t.Fatalf("SLOWLOG GET via redis-cli: %q", got)
	}
	if got := runTool(t, cli, append(base, "SLOWLOG", "LEN")...); strings.TrimSpace(got) == "0" {
		t.Fatalf("SLOWLOG LEN: %q", got)
	}
	got = runTool(t, cli, append(base, "INFO", "commandstats")...)
	if !strings.Contains(got, "cmdstat_echo:calls=1,") {
		t.Fatalf("INFO commandstats via redis-cli: %q", got)
	}
	got = runTool(t, cli, append(base, "INFO", "latencystats")...)
	if !strings.Contains(got, "latency_percentiles_usec_echo:p50=") {
		t.Fatalf("INFO latencystats via redis-cli: %q", got)
	}
}
