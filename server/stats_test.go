package server

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"
)

// parseInfo splits an INFO reply into sections of field/value maps, failing
// on any line that is neither a header, blank, nor "field:value".
func parseInfo(t *testing.T, info string) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	var cur map[string]string
	for _, line := range strings.Split(strings.TrimSuffix(info, "\r\n"), "\r\n") {
		switch {
		case line == "":
		case strings.HasPrefix(line, "# "):
			cur = map[string]string{}
			out[strings.ToLower(line[2:])] = cur
		default:
			k, v, ok := strings.Cut(line, ":")
			if !ok || cur == nil {
				t.Fatalf("INFO line %q is not field:value in a section", line)
			}
			cur[k] = v
		}
	}
	return out
}

// parseKV parses "a=1,b=2" (an INFO value of commandstats, latencystats
// or keyspace).
func parseKV(t *testing.T, v string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, kv := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(kv, "=")
		if !ok {
			t.Fatalf("%q: %q is not k=v", v, kv)
		}
		m[k] = val
	}
	return m
}

func TestInfoSectionsDefaultAndAll(t *testing.T) {
	ts := startServer(t, Config{MaxClients: 77}, nil)
	rc := ts.client(t)
	ctx := context.Background()
	info := parseInfo(t, rc.Info(ctx).Val())
	for _, sec := range []string{"server", "clients", "memory", "stats"} {
		if info[sec] == nil {
			t.Errorf("INFO lacks section %s: %v", sec, info)
		}
	}
	for _, sec := range []string{"commandstats", "latencystats"} {
		if info[sec] != nil {
			t.Errorf("INFO without arguments shows %s, Redis does not", sec)
		}
	}
	if info["clients"]["maxclients"] != "77" || info["clients"]["connected_clients"] != "1" {
		t.Errorf("clients = %v", info["clients"])
	}
	mem := info["memory"]
	for _, f := range []string{"used_memory", "used_memory_rss", "go_sys_bytes", "go_goroutines"} {
		if n, err := strconv.ParseUint(mem[f], 10, 64); err != nil || n == 0 {
			t.Errorf("memory %s = %q, want a positive integer", f, mem[f])
		}
	}
	all := rc.Info(ctx, "everything").Val()
	if !strings.Contains(all, "# Commandstats\r\n") || !strings.Contains(all, "# Latencystats\r\n") {
		t.Fatalf("INFO everything lacks commandstats/latencystats: %q", all)
	}
	// Redis's section order.
	order := []string{"# Server", "# Clients", "# Memory", "# Stats", "# Commandstats", "# Latencystats"}
	last := -1
	for _, h := range order {
		i := strings.Index(all, h+"\r\n")
		if i < last {
			t.Fatalf("section %s out of order in %q", h, all)
		}
		last = i
	}
}

func TestCommandStatsCountsCallsFailuresRejections(t *testing.T) {
	ts := startServer(t, Config{}, func(s *Server) {
		s.Register("fails", 0, func(c *Ctx, args [][]byte) error { return NewError("no") })
		s.Register("writeserr", 0, func(c *Ctx, args [][]byte) error {
			c.WriteError("written by the handler")
			return nil
		})
	})
	rc := ts.client(t)
	ctx := context.Background()
	for range 3 {
		rc.Ping(ctx)
	}
	rc.Do(ctx, "ping", "a", "b") // ran: wrong arity found by the handler, failed
	rc.Do(ctx, "echo")           // too few arguments: rejected
	rc.Do(ctx, "fails")
	rc.Do(ctx, "writeserr")
	rc.Do(ctx, "nosuchcommand")

	info := parseInfo(t, rc.Info(ctx, "commandstats").Val())
	cs := info["commandstats"]
	ping := parseKV(t, cs["cmdstat_ping"])
	if ping["calls"] != "4" || ping["failed_calls"] != "1" || ping["rejected_calls"] != "0" {
		t.Errorf("cmdstat_ping = %v", ping)
	}
	if _, err := strconv.ParseFloat(ping["usec_per_call"], 64); err != nil || !strings.Contains(ping["usec_per_call"], ".") {
		t.Errorf("usec_per_call = %q", ping["usec_per_call"])
	}
	if _, err := strconv.ParseUint(ping["usec"], 10, 64); err != nil {
		t.Errorf("usec = %q", ping["usec"])
	}
	echo := parseKV(t, cs["cmdstat_echo"])
	if echo["calls"] != "0" || echo["rejected_calls"] != "1" || echo["failed_calls"] != "0" {
		t.Errorf("cmdstat_echo = %v", echo)
	}
	if f := parseKV(t, cs["cmdstat_fails"]); f["calls"] != "1" || f["failed_calls"] != "1" {
		t.Errorf("cmdstat_fails = %v", f)
	}
	if f := parseKV(t, cs["cmdstat_writeserr"]); f["calls"] != "1" || f["failed_calls"] != "1" {
		t.Errorf("cmdstat_writeserr = %v", f)
	}
	if _, ok := cs["cmdstat_nosuchcommand"]; ok {
		t.Error("an unknown command has a cmdstat line")
	}
	// The INFO that produced this reply is counted after it ran, so only
	// the earlier one shows; CLIENT SETINFO from go-redis' handshake shows too.
	if _, ok := cs["cmdstat_info"]; ok {
		t.Error("INFO counted before it finished")
	}
	st := parseInfo(t, rc.Info(ctx, "stats").Val())["stats"]
	// failed: go-redis' HELLO 3 (NOPROTO), ping a b, fails, writeserr;
	// rejected: echo and the unknown command.
	if st["failed_calls"] != "4" || st["rejected_calls"] != "2" || st["unknown_commands"] != "1" || st["total_error_replies"] != "6" {
		t.Errorf("stats = %v", st)
	}
}

func TestLatencyStats(t *testing.T) {
	ts := startServer(t, Config{}, func(s *Server) {
		s.Register("sleep2ms", 0, func(c *Ctx, args [][]byte) error {
			time.Sleep(2 * time.Millisecond)
			c.WriteOK()
			return nil
		})
	})
	rc := ts.client(t)
	ctx := context.Background()
	for range 5 {
		if err := rc.Do(ctx, "sleep2ms").Err(); err != nil {
			t.Fatal(err)
		}
	}
	rc.Ping(ctx)
	ls := parseInfo(t, rc.Info(ctx, "latencystats").Val())["latencystats"]
	v, ok := ls["latency_percentiles_usec_sleep2ms"]
	if !ok {
		t.Fatalf("no latencystats line for sleep2ms: %v", ls)
	}
	p := parseKV(t, v)
	for _, k := range []string{"p50", "p99", "p99.9"} {
		us, err := strconv.ParseFloat(p[k], 64)
		if err != nil {
			t.Fatalf("%s = %q", k, p[k])
		}
		if us < 2000 || us > 2000*20 {
			t.Errorf("%s = %v µs for a 2 ms sleep", k, us)
		}
	}
	if _, ok := ls["latency_percentiles_usec_ping"]; !ok {
		t.Errorf("no line for ping: %v", ls)
	}
}

func TestSlowlog(t *testing.T) {
	ts := startServer(t, Config{}, nil)
	rc := ts.client(t)
	ctx := context.Background()
	// The default threshold (10 ms) logs nothing here.
	rc.Ping(ctx)
	if n := rc.Do(ctx, "SLOWLOG", "LEN").Val(); n != int64(0) {
		t.Fatalf("SLOWLOG LEN at the default threshold = %v", n)
	}
	ts.SetSlowlog(0, 3)
	if err := rc.Do(ctx, "CLIENT", "SETNAME", "slowpoke").Err(); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 200)
	rc.Echo(ctx, long)
	args := []any{"ping"}
	for range 40 {
		args = append(args, "a")
	}
	rc.Do(ctx, args...) // 41 arguments: kept as 31 and a summary
	rc.Do(ctx, "AUTH", "user", "sekrit")

	entries, err := rc.Do(ctx, "SLOWLOG", "GET").Slice()
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3 { // max-len 3: CLIENT SETNAME was pushed out
		t.Fatalf("SLOWLOG GET = %d entries, want 3: %v", len(entries), entries)
	}
	newest := entries[0].([]any)
	if len(newest) != 6 {
		t.Fatalf("entry = %v, want 6 fields", newest)
	}
	if a := newest[3].([]any); a[0] != "AUTH" || a[1] != "(redacted)" || a[2] != "(redacted)" {
		t.Errorf("AUTH entry args = %v, want the credentials redacted", a)
	}
	if newest[5] != "slowpoke" || !strings.HasPrefix(newest[4].(string), "127.0.0.1:") {
		t.Errorf("client addr/name = %v %v", newest[4], newest[5])
	}
	if ts := newest[1].(int64); time.Since(time.Unix(ts, 0)) > time.Minute {
		t.Errorf("timestamp %d is not now", ts)
	}
	if d := newest[2].(int64); d < 0 {
		t.Errorf("duration %d", d)
	}
	many := entries[1].([]any)[3].([]any)
	if len(many) != 32 || many[31] != "... (10 more arguments)" {
		t.Errorf("41-argument entry kept %d args, last %q", len(many), many[len(many)-1])
	}
	echo := entries[2].([]any)
	if a := echo[3].([]any); a[1] != strings.Repeat("x", 128)+"... (72 more bytes)" {
		t.Errorf("long argument kept as %q", a[1])
	}
	if id0, id2 := entries[0].([]any)[0].(int64), echo[0].(int64); id0 != id2+2 {
		t.Errorf("ids %d, %d: want consecutive, newest first", id0, id2)
	}
	if got := rc.Do(ctx, "SLOWLOG", "GET", "1").Val().([]any); len(got) != 1 {
		t.Errorf("SLOWLOG GET 1 = %d entries", len(got))
	}
	if err := rc.Do(ctx, "SLOWLOG", "GET", "-2").Err(); err == nil {
		t.Error("SLOWLOG GET -2 accepted")
	}
	if err := rc.Do(ctx, "SLOWLOG", "RESET").Err(); err != nil {
		t.Fatal(err)
	}
	// RESET itself is then logged (threshold 0), as in Redis.
	if n := rc.Do(ctx, "SLOWLOG", "LEN").Val(); n != int64(1) {
		t.Fatalf("SLOWLOG LEN after RESET = %v, want 1 (the RESET)", n)
	}
	ts.SetSlowlog(-1, 3)
	rc.Do(ctx, "SLOWLOG", "RESET")
	rc.Ping(ctx)
	if n := rc.Do(ctx, "SLOWLOG", "LEN").Val(); n != int64(0) {
		t.Fatalf("SLOWLOG LEN with the log disabled = %v", n)
	}
	if err := rc.Do(ctx, "SLOWLOG", "NOPE").Err(); err == nil || !strings.Contains(err.Error(), "SLOWLOG HELP") {
		t.Errorf("unknown subcommand: %v", err)
	}
}

func TestConfigGetServerParams(t *testing.T) {
	ts := startServer(t, Config{MaxClients: 12}, func(s *Server) {
		s.AddConfigParams(func() [][2]string {
			return [][2]string{{"appendonly", "yes"}, {"appendfsync", "everysec"}}
		})
	})
	ts.SetSlowlog(500, 9)
	rc := ts.client(t)
	got, err := rc.ConfigGet(context.Background(), "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := strings.Cut(ts.addr, ":")
	want := map[string]string{"appendonly": "yes", "appendfsync": "everysec", "maxclients": "12",
		"port": port, "bind": "127.0.0.1", "save": "", "slowlog-log-slower-than": "500", "slowlog-max-len": "9"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("CONFIG GET %s = %q, want %q", k, got[k], v)
		}
	}
}

// TestObserveWithoutSocket checks the stats on the command path itself,
// the path BenchmarkExecPing measures.
func TestObserveWithoutSocket(t *testing.T) {
	s := mustNew(t, Config{})
	c := newConn(s, discardConn{})
	for range 10 {
		c.exec([][]byte{[]byte("PING")})
	}
	c.exec([][]byte{[]byte("ECHO")})
	calls, rejected, failed := s.commandTotals()
	if calls != 10 || rejected != 1 || failed != 0 {
		t.Fatalf("calls, rejected, failed = %d, %d, %d; want 10, 1, 0", calls, rejected, failed)
	}
}

// TestObserveAllocatesNothing: the statistics add no allocation to a
// command that is not slow enough for the SLOWLOG.
func TestObserveAllocatesNothing(t *testing.T) {
	s := mustNew(t, Config{})
	c := newConn(s, discardConn{})
	args := [][]byte{[]byte("PING")}
	allocs := testing.AllocsPerRun(1000, func() {
		c.exec(args)
		if c.w.Buffered() > 8<<10 {
			c.w.Flush()
		}
	})
	if allocs != 0 {
		t.Fatalf("PING allocates %v times per command", allocs)
	}
}
