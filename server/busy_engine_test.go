package server

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/wal"
	"github.com/redis/go-redis/v9"
)

// TestBusyTimeoutStopsEngineReads: the engine's long reads (a filtered
// MEM.COUNT, MEM.SCAN and MEM.RETRIEVE, and MEM.DEL FILTER's evaluation
// of its filter) honour the command's busy-timeout through c.Context()
// and answer -TIMEOUT; writes are never stopped part way, and
// the connection goes on serving. A busy-timeout of a nanosecond has
// passed before any read's first step, so the outcome does not depend on
// the machine's speed.
func TestBusyTimeoutStopsEngineReads(t *testing.T) {
	db, err := engine.Open(t.TempDir(), engine.Options{Sync: wal.SyncNone, CheckpointInterval: -1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ts := startServer(t, Config{BusyTimeout: time.Nanosecond}, func(s *Server) { s.RegisterMem(db) })
	rdb := ts.client(t)
	mustDo(t, rdb, "MEM.CREATE", "m", "DIM", 2, "METRIC", "L2")
	for i := range 20 {
		mustDo(t, rdb, "MEM.ADD", "m", "VALUES", 2, i, 0, "ATTRS", `{"n":1}`)
	}
	for _, cmd := range [][]any{
		{"MEM.COUNT", "m", "FILTER", ".n == 1"},
		{"MEM.SCAN", "m", "0", "FILTER", ".n == 1"},
		{"MEM.RETRIEVE", "m", "VALUES", 2, 0, 0, "K1", 5, "K2", 5, "FILTER", ".n == 1"},
		{"MEM.DEL", "m", "FILTER", ".n == 1"}, // stopped while it reads: deletes nothing
	} {
		_, err := rdb.Do(context.Background(), cmd...).Result()
		var re redis.Error
		if !errors.As(err, &re) || !strings.HasPrefix(err.Error(), "TIMEOUT ") {
			t.Fatalf("%v: %v, want -TIMEOUT", cmd[0], err)
		}
	}
	if n := mustDo(t, rdb, "MEM.COUNT", "m"); n != int64(20) {
		t.Fatalf("MEM.COUNT without a filter = %v", n)
	}
	mustDo(t, rdb, "MEM.ADD", "m", "VALUES", 2, 9, 9)
	if r := mustDo(t, rdb, "PING"); r != "PONG" {
		t.Fatalf("PING = %v", r)
	}
}
