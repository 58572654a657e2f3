package server

import (
	"context"
	"math"
	"strconv"
	"testing"

	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/wal"
)

// startMemSync is startMem with a chosen sync policy.
func startMemSync(t *testing.T, p wal.SyncPolicy) (*testServer, *engine.DB) {
	t.Helper()
	db, err := engine.Open(t.TempDir(), engine.Options{Sync: p, CheckpointInterval: -1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, Config{}, func(s *Server) { s.RegisterMem(db) })
	t.Cleanup(func() { db.Close() })
	return ts, db
}

func TestInfoPersistenceKeyspaceMemory(t *testing.T) {
	ts, db := startMemSync(t, wal.SyncAlways)
	rc := ts.client(t)
	ctx := context.Background()
	mustDo(t, rc, "MEM.CREATE", "plans", "DIM", 2)
	mustDo(t, rc, "MEM.CREATE", "ns:odd", "DIM", 2)
	for i, q := range []string{"1", "2", "3", "10"} {
		mustDo(t, rc, "MEM.ADD", "plans", "VALUES", 2, 1, i, "Q", q)
	}
	mustDo(t, rc, "MEM.DEL", "plans", 4) // Q 1, 2, 3 remain
	mustDo(t, rc, "MEM.CHECKPOINT")

	info := parseInfo(t, rc.Info(ctx).Val())
	p := info["persistence"]
	if p == nil {
		t.Fatalf("no persistence section: %v", info)
	}
	ws := db.WALStats()
	if n, _ := strconv.ParseUint(p["wal_records"], 10, 64); n < 7 || n > ws.Records {
		t.Errorf("wal_records = %q (WAL has %d)", p["wal_records"], ws.Records)
	}
	if n, _ := strconv.ParseUint(p["wal_fsyncs"], 10, 64); n == 0 {
		t.Errorf("wal_fsyncs = %q under sync always", p["wal_fsyncs"])
	}
	if n, _ := strconv.ParseInt(p["wal_disk_bytes"], 10, 64); n <= 0 {
		t.Errorf("wal_disk_bytes = %q", p["wal_disk_bytes"])
	}
	if p["wal_segments"] != "1" || p["aof_last_write_status"] != "ok" || p["appendfsync"] != "always" || p["wal_sync"] != "always" {
		t.Errorf("persistence = %v", p)
	}
	lat := parseKV(t, p["wal_fsync_latency_percentiles_usec"])
	for _, k := range []string{"p50", "p99", "p99.9"} {
		if v, err := strconv.ParseFloat(lat[k], 64); err != nil || v <= 0 {
			t.Errorf("fsync %s = %q", k, lat[k])
		}
	}
	memrl := parseInfo(t, rc.Info(ctx, "memrl").Val())["memrl"]
	for _, k := range []string{"checkpoint_last_unix", "checkpoint_last_kind", "checkpoint_deltas", "checkpoint_failures"} {
		if p[k] != memrl[k] || p[k] == "" {
			t.Errorf("%s: persistence %q, memrl %q", k, p[k], memrl[k])
		}
	}

	ks := info["keyspace"]
	plans := parseKV(t, ks["coll_plans"])
	if plans["memories"] != "3" || plans["deleted"] != "1" || plans["rows"] != "4" || plans["dim"] != "2" || plans["index"] != "flat" {
		t.Errorf("coll_plans = %v", plans)
	}
	mean, _ := strconv.ParseFloat(plans["q_mean"], 64)
	std, _ := strconv.ParseFloat(plans["q_std"], 64)
	if math.Abs(mean-2) > 1e-5 || math.Abs(std-math.Sqrt(2.0/3)) > 1e-5 {
		t.Errorf("q_mean %v q_std %v, want 2 and %v", mean, std, math.Sqrt(2.0/3))
	}
	if odd := parseKV(t, ks["coll_ns%3Aodd"]); odd["memories"] != "0" {
		t.Errorf("collection ns:odd: %v (keyspace %v)", odd, ks)
	}
	if n, _ := strconv.ParseInt(info["memory"]["mem_mapped_files_bytes"], 10, 64); n < 4*2*4 {
		t.Errorf("mem_mapped_files_bytes = %q", info["memory"]["mem_mapped_files_bytes"])
	}

	// MEM.* commands show in commandstats like any other.
	cs := parseInfo(t, rc.Info(ctx, "commandstats").Val())["commandstats"]
	if add := parseKV(t, cs["cmdstat_mem.add"]); add["calls"] != "4" || add["failed_calls"] != "0" {
		t.Errorf("cmdstat_mem.add = %v", add)
	}
	wantErr(t, rc, "", "MEM.ADD", "nosuch", "VALUES", 2, 1, 1)
	cs = parseInfo(t, rc.Info(ctx, "commandstats").Val())["commandstats"]
	if add := parseKV(t, cs["cmdstat_mem.add"]); add["calls"] != "5" || add["failed_calls"] != "1" {
		t.Errorf("cmdstat_mem.add after a failure = %v", add)
	}

	// The same figures reach Prometheus.
	fams := scrape(t, serveMetrics(t, ts, false))
	found := false
	for _, m := range fams["memrl_collection_memories"].GetMetric() {
		if m.GetLabel()[0].GetValue() == "plans" {
			found = m.GetGauge().GetValue() == 3
		}
	}
	if !found {
		t.Errorf("memrl_collection_memories{collection=plans} != 3: %v", fams["memrl_collection_memories"])
	}
	if h := fams["memrl_wal_fsync_duration_seconds"].GetMetric()[0].GetHistogram(); h.GetSampleCount() == 0 {
		t.Errorf("no fsyncs in memrl_wal_fsync_duration_seconds")
	}
}

func TestConfigGetAppendfsyncFollowsSyncPolicy(t *testing.T) {
	for p, want := range map[wal.SyncPolicy]string{wal.SyncAlways: "always", wal.SyncInterval: "everysec", wal.SyncNone: "no"} {
		ts, db := startMemSync(t, p)
		got, err := ts.client(t).ConfigGet(context.Background(), "append*").Result()
		if err != nil {
			t.Fatal(err)
		}
		if got["appendfsync"] != want || got["appendonly"] != "yes" || len(got) != 2 {
			t.Errorf("sync %v: CONFIG GET append* = %v, want appendfsync %s", p, got, want)
		}
		if d := ts.client(t).ConfigGet(context.Background(), "dir").Val()["dir"]; d != db.Dir() {
			t.Errorf("CONFIG GET dir = %q, want %q", d, db.Dir())
		}
	}
}
