package server

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// serveMetrics serves ts's metrics handler on a real loopback listener and
// returns its base URL.
func serveMetrics(t *testing.T, ts *testServer, withPprof bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: ts.MetricsHandler(withPprof), ReadHeaderTimeout: 5 * time.Second}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return "http://" + ln.Addr().String()
}

// scrape fetches and parses /metrics.
func scrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return fams
}

// metricFor returns the metric of fam with label cmd=name, or nil.
func metricFor(fam *dto.MetricFamily, name string) *dto.Metric {
	if fam == nil {
		return nil
	}
	for _, m := range fam.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "cmd" && l.GetValue() == name {
				return m
			}
		}
	}
	return nil
}

func TestMetricsScrape(t *testing.T) {
	ts := startServer(t, Config{}, nil)
	base := serveMetrics(t, ts, false)
	rc := ts.client(t)
	ctx := context.Background()
	rc.Ping(ctx)
	before := metricFor(scrape(t, base)["memrl_commands_total"], "ping").GetCounter().GetValue()
	for range 5 {
		rc.Ping(ctx)
	}
	rc.Do(ctx, "ping", "x", "y")
	fams := scrape(t, base)
	after := metricFor(fams["memrl_commands_total"], "ping").GetCounter().GetValue()
	if after-before != 6 {
		t.Fatalf("memrl_commands_total{cmd=ping} moved %v -> %v, want +6", before, after)
	}
	if f := metricFor(fams["memrl_commands_failed_total"], "ping").GetCounter().GetValue(); f != 1 {
		t.Errorf("failed ping = %v, want 1", f)
	}
	h := metricFor(fams["memrl_command_duration_seconds"], "ping").GetHistogram()
	if h.GetSampleCount() != uint64(after) || len(h.GetBucket()) == 0 {
		t.Fatalf("duration histogram: count %d (calls %v), %d buckets", h.GetSampleCount(), after, len(h.GetBucket()))
	}
	if last := h.GetBucket()[len(h.GetBucket())-1]; last.GetCumulativeCount() != h.GetSampleCount() {
		t.Errorf("largest bucket holds %d of %d", last.GetCumulativeCount(), h.GetSampleCount())
	}
	if g := fams["memrl_connected_clients"].GetMetric()[0].GetGauge().GetValue(); g != 1 {
		t.Errorf("connected clients = %v", g)
	}
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes"} {
		if fams[name] == nil {
			t.Errorf("no %s", name)
		}
	}
}

func TestPprofOnlyWhenAsked(t *testing.T) {
	ts := startServer(t, Config{}, nil)
	for _, withPprof := range []bool{false, true} {
		base := serveMetrics(t, ts, withPprof)
		resp, err := http.Get(base + "/debug/pprof/")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		ok := resp.StatusCode == 200 && strings.Contains(string(body), "goroutine")
		if ok != withPprof {
			t.Errorf("pprof %v: GET /debug/pprof/ = %s %.80q", withPprof, resp.Status, body)
		}
	}
}

// TestMetricsRefuseForeignHost: a web page reaching the loopback listener
// through DNS rebinding sends its own host name; it gets 403, and the
// command line (which may hold passwords) is never served.
func TestMetricsRefuseForeignHost(t *testing.T) {
	ts := startServer(t, Config{}, nil)
	base := serveMetrics(t, ts, true)
	get := func(path, host string) int {
		req, _ := http.NewRequest("GET", base+path, nil)
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for host, want := range map[string]int{"": 200, "localhost:9100": 200, "127.0.0.1": 200, "[::1]:9100": 200, "evil.example:9100": 403, "10.0.0.1": 403} {
		if got := get("/metrics", host); got != want {
			t.Errorf("Host %q: %d, want %d", host, got, want)
		}
	}
	if got := get("/debug/pprof/cmdline", ""); got != 404 {
		t.Errorf("/debug/pprof/cmdline: %d, want 404", got)
	}
}
