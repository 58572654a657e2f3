package server

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/wal"
)

// TestMaxDataMemory (issue 26): with MaxDataMemory set, writes that add
// data are refused with -OOM once the data (engine.DataMemory) reaches
// it; reads are still served and deletes still run, after which writes
// are admitted again. INFO memory reports the data by kind, in total, and
// the limit and refusals.
func TestMaxDataMemory(t *testing.T) {
	db, err := engine.Open(t.TempDir(), engine.Options{Sync: wal.SyncNone, CheckpointInterval: -1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	const limit = 256 << 10
	ts := startServer(t, Config{MaxDataMemory: limit}, func(s *Server) { s.RegisterMem(db) })
	rdb := ts.client(t)
	ctx := context.Background()
	mustDo(t, rdb, "MEM.CREATE", "m", "DIM", 4, "METRIC", "L2", "INDEXED", "tags")

	added := 0
	var oom error
	for i := 0; i < 5000 && oom == nil; i++ {
		err := rdb.Do(ctx, "MEM.ADD", "m", "VALUES", 4, i, 1, 2, 3,
			"ATTRS", `{"tags":["t`+strconv.Itoa(i)+`","all"]}`).Err()
		switch {
		case err == nil:
			added++
		case strings.HasPrefix(err.Error(), "OOM"):
			oom = err
		default:
			t.Fatal(err)
		}
	}
	if oom == nil {
		t.Fatalf("%d adds, none refused; data %+v", added, db.DataMemory())
	}
	used := db.DataMemory().Total()
	if used < limit || added == 0 {
		t.Fatalf("refused at %d bytes of data after %d adds (limit %d)", used, added, limit)
	}
	// Every write that adds data is refused, before it runs.
	for _, args := range [][]any{
		{"MEM.CREATE", "other", "DIM", 4},
		{"MEM.REWARD", "m", 1, 1},
		{"MEM.SETATTR", "m", 1, `{"tags":["new"]}`},
	} {
		if err := rdb.Do(ctx, args...).Err(); err == nil || !strings.HasPrefix(err.Error(), "OOM") {
			t.Fatalf("%v at the limit: %v, want OOM", args, err)
		}
	}
	if n := mustDo(t, rdb, "MEM.LIST"); len(n.([]any)) != 1 {
		t.Fatalf("a refused MEM.CREATE created a collection: %v", n)
	}
	// Reads are served.
	if res := mustDo(t, rdb, "MEM.RETRIEVE", "m", "VALUES", 4, 1, 1, 2, 3, "K1", 3, "K2", 3, "FILTER", `"all" in .tags`); len(res.([]any)) != 3 {
		t.Fatalf("MEM.RETRIEVE at the limit: %v", res)
	}
	// INFO memory shows the data and what --maxmemory did.
	info := parseInfo(t, rdb.Info(ctx, "memory").Val())["memory"]
	dm := db.DataMemory()
	for field, want := range map[string]int64{
		"used_memory_dataset":  dm.Total(),
		"mem_vectors_bytes":    dm.Vectors,
		"mem_records_bytes":    dm.Records,
		"mem_index_bytes":      dm.Index,
		"mem_attrs_bytes":      dm.Attrs,
		"mem_attr_index_bytes": dm.AttrIndex,
		"mem_history_bytes":    dm.History,
		"maxmemory_dataset":    limit,
	} {
		if got := info[field]; got != strconv.FormatInt(want, 10) {
			t.Errorf("INFO memory %s = %q, want %d", field, got, want)
		}
	}
	ks := parseKV(t, parseInfo(t, rdb.Info(ctx, "keyspace").Val())["keyspace"]["coll_m"])
	if ks["data_bytes"] != strconv.FormatInt(dm.Total(), 10) { // one collection: all of it
		t.Errorf("INFO keyspace data_bytes %q, want %d", ks["data_bytes"], dm.Total())
	}
	if dm.Vectors == 0 || dm.Attrs == 0 || dm.AttrIndex == 0 {
		t.Errorf("a kind missing: %+v", dm)
	}
	if r, _ := strconv.Atoi(info["writes_refused_maxmemory"]); r != 4 || info["maxmemory_policy"] != "noeviction" {
		t.Errorf("writes_refused_maxmemory %q (want 4), maxmemory_policy %q", info["writes_refused_maxmemory"], info["maxmemory_policy"])
	}
	// Deletes run, and make room.
	ids := []any{"MEM.DEL", "m"}
	for id := 1; id <= added/2; id++ {
		ids = append(ids, id)
	}
	if n := mustDo(t, rdb, ids...); n != int64(added/2) {
		t.Fatalf("MEM.DEL at the limit deleted %v of %d", n, added/2)
	}
	if db.DataMemory().Total() >= limit {
		t.Fatalf("deleting half left %d bytes of data", db.DataMemory().Total())
	}
	mustDo(t, rdb, "MEM.ADD", "m", "VALUES", 4, 0, 0, 0, 1)
}
