package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/redis/go-redis/v9"
)

func parseObserveFlags(t *testing.T, args ...string) (*observeFlags, error) {
	t.Helper()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o := addObserveFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return o, o.check()
}

func TestObserveFlagsChecked(t *testing.T) {
	for _, bad := range [][]string{
		{"--metrics-addr", "0.0.0.0:9100"},
		{"--metrics-addr", "192.168.1.5:9100"},
		{"--metrics-addr", ":9100"}, // all interfaces
		{"--metrics-addr", "nonsense"},
		{"--pprof"}, // without --metrics-addr
		{"--log-format", "xml"},
		{"--log-level", "loud"},
		{"--slowlog-max-len", "-1"},
	} {
		if _, err := parseObserveFlags(t, bad...); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	for _, good := range [][]string{
		{"--metrics-addr", "127.0.0.1:0", "--pprof"},
		{"--metrics-addr", "[::1]:9100"},
		{"--metrics-addr", "localhost:9100"},
		{"--log-format", "json", "--log-level", "debug", "--slowlog-log-slower-than", "-1"},
	} {
		if _, err := parseObserveFlags(t, good...); err != nil {
			t.Errorf("%v: %v", good, err)
		}
	}
}

// TestEngineLogfLevels: the engine's messages reach slog, at Error when
// they carry an error, Info otherwise, and --log-level filters them.
func TestEngineLogfLevels(t *testing.T) {
	o, err := parseObserveFlags(t, "--log-format", "json", "--log-level", "info")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	l, _ := o.logger(&buf)
	logf := engineLogf(l)
	logf("memrl: collection %q: index build failed: %v", "c", errors.New("disk full"))
	logf("memrl: collection %q: built on %d memories", "c", 10)
	l.Debug("not shown at info")
	var lines []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		lines = append(lines, m)
	}
	if len(lines) != 2 {
		t.Fatalf("%d lines: %v", len(lines), lines)
	}
	if lines[0]["level"] != "ERROR" || lines[0]["msg"] != `collection "c": index build failed: disk full` || lines[0]["source"] != "engine" {
		t.Errorf("error line = %v", lines[0])
	}
	if lines[1]["level"] != "INFO" {
		t.Errorf("info line = %v", lines[1])
	}
}

// TestServeObservability runs memrl serve with JSON logs, a metrics
// listener with pprof and a SLOWLOG logging everything, and checks each
// from outside, as an operator would.
func TestServeObservability(t *testing.T) {
	bin := buildMemrl(t)
	addr, maddr := freeAddr(t), freeAddr(t)
	logPath := filepath.Join(t.TempDir(), "log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, "serve", "--dir", t.TempDir(), "--addr", addr, "--sync", "interval",
		"--log-format", "json", "--metrics-addr", maddr, "--pprof", "--slowlog-log-slower-than", "0", "--slowlog-max-len", "5")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer rdb.Close()
	ctx := context.Background()
	waitServing(t, cmd, rdb, logPath)
	if err := rdb.Do(ctx, "MEM.CREATE", "c", "DIM", 2).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Do(ctx, "MEM.ADD", "c", "VALUES", 2, 1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	cfg := rdb.ConfigGet(ctx, "*").Val()
	if cfg["appendfsync"] != "everysec" || cfg["slowlog-log-slower-than"] != "0" || cfg["slowlog-max-len"] != "5" || cfg["appendonly"] != "yes" {
		t.Errorf("CONFIG GET = %v", cfg)
	}
	if n := rdb.Do(ctx, "SLOWLOG", "LEN").Val(); n != int64(5) {
		t.Errorf("SLOWLOG LEN = %v, want 5 (everything logged, 5 kept)", n)
	}

	resp, err := http.Get("http://" + maddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var adds float64
	for _, m := range fams["memrl_commands_total"].GetMetric() {
		if m.GetLabel()[0].GetValue() == "mem.add" {
			adds = m.GetCounter().GetValue()
		}
	}
	if adds != 1 {
		t.Errorf("memrl_commands_total{cmd=mem.add} = %v, want 1", adds)
	}
	if fams["memrl_wal_records_total"] == nil {
		t.Error("no engine metrics")
	}
	resp, err = http.Get("http://" + maddr + "/debug/pprof/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("pprof index: %s", resp.Status)
	}

	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("memrl serve: %v", err)
	}
	b, _ := os.ReadFile(logPath)
	sc := bufio.NewScanner(bytes.NewReader(b))
	var msgs []string
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line is not JSON: %q", sc.Text())
		}
		if m["level"] == nil || m["time"] == nil {
			t.Errorf("log line without level or time: %q", sc.Text())
		}
		msgs = append(msgs, m["msg"].(string))
	}
	for _, want := range []string{"opened the database", "serving metrics", "serving", "closed cleanly"} {
		found := false
		for _, m := range msgs {
			found = found || m == want
		}
		if !found {
			t.Errorf("no %q in the log: %q", want, msgs)
		}
	}
}

// TestServeRefusesRemoteMetrics: memrl serve exits, before opening the
// database, when --metrics-addr is not a loopback address.
func TestServeRefusesRemoteMetrics(t *testing.T) {
	bin := buildMemrl(t)
	dir := filepath.Join(t.TempDir(), "data")
	out, err := exec.Command(bin, "serve", "--dir", dir, "--addr", freeAddr(t), "--metrics-addr", "0.0.0.0:0").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "loopback") {
		t.Fatalf("memrl serve --metrics-addr 0.0.0.0:0: %v, %s", err, out)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the database folder was created: %v", err)
	}
}
