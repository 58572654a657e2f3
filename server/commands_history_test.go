package server

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/wal"
)

// TestMemHistoryCommand: MEM.HISTORY over the protocol on a fake clock:
// entries newest first with time, reward, Q after and visits; COUNT; KEY;
// a memory never rewarded; the errors, which change nothing; and the
// command is read-only (MULTI queues it like a read).
func TestMemHistoryCommand(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	ts := startMemClock(t, clock)
	rdb := ts.client(t)
	mustDo(t, rdb, "MEM.CREATE", "h", "DIM", 2, "METRIC", "L2", "ALPHA", 0.5)
	mustDo(t, rdb, "MEM.ADD", "h", "VALUES", 2, 1, 0, "KEY", "k")
	mustDo(t, rdb, "MEM.ADD", "h", "VALUES", 2, 0, 1)
	var want []any
	for i, r := range []string{"1", "-1", "0.25"} {
		advance(1500 * time.Millisecond)
		q := mustDo(t, rdb, "MEM.REWARD", "h", r, 1).([]any)[0]
		want = append([]any{[]any{now.UnixMilli(), r, q, int64(i + 1)}}, want...)
	}
	for _, args := range [][]any{
		{"MEM.HISTORY", "h", 1},
		{"MEM.HISTORY", "h", "KEY", "k"},
		{"mem.history", "h", "key", "k", "count", 3},
		{"MEM.HISTORY", "h", 1, "COUNT", 100},
	} {
		if got := mustDo(t, rdb, args...); !reflect.DeepEqual(got, want) {
			t.Fatalf("%v = %v, want %v", args, got, want)
		}
	}
	if got := mustDo(t, rdb, "MEM.HISTORY", "h", 1, "COUNT", 2); !reflect.DeepEqual(got, want[:2]) {
		t.Fatalf("COUNT 2 = %v", got)
	}
	if got := mustDo(t, rdb, "MEM.HISTORY", "h", 2); fmt.Sprint(got) != "[]" {
		t.Fatalf("never rewarded: %v", got)
	}
	// The newest entry is what MEM.GET reports.
	get := mustDo(t, rdb, "MEM.GET", "h", 1).([]any)
	for i := 0; i < len(get); i += 2 {
		if get[i] == "q" && get[i+1] != want[0].([]any)[2] {
			t.Fatalf("MEM.GET q %v, newest history q %v", get[i+1], want[0])
		}
	}
	for _, tc := range []struct {
		args []any
		err  string
	}{
		{[]any{"MEM.HISTORY", "h"}, "wrong number of arguments"},
		{[]any{"MEM.HISTORY", "nope", 1}, "no such collection"},
		{[]any{"MEM.HISTORY", "h", 99}, "no such memory"},
		{[]any{"MEM.HISTORY", "h", "KEY", "nope"}, "no such memory"},
		{[]any{"MEM.HISTORY", "h", "x"}, "memory id"},
		{[]any{"MEM.HISTORY", "h", 1, "COUNT"}, "COUNT"},
		{[]any{"MEM.HISTORY", "h", 1, "COUNT", 0}, "at least 1"},
		{[]any{"MEM.HISTORY", "h", 1, "COUNT", -2}, "at least 1"},
		{[]any{"MEM.HISTORY", "h", 1, "COUNT", "x"}, "integer"},
		{[]any{"MEM.HISTORY", "h", 1, "COUNT", 1, "COUNT", 2}, "twice"},
		{[]any{"MEM.HISTORY", "h", 1, "LIMIT", 2}, "unknown MEM.HISTORY option"},
	} {
		err := rdb.Do(context.Background(), tc.args...).Err()
		if err == nil || !strings.HasPrefix(err.Error(), "ERR") || !strings.Contains(err.Error(), tc.err) {
			t.Fatalf("%v: %v, want ERR …%s", tc.args, err, tc.err)
		}
	}
	// Deleting the memory removes its history.
	mustDo(t, rdb, "MEM.DEL", "h", 1)
	if err := rdb.Do(context.Background(), "MEM.HISTORY", "h", 1).Err(); err == nil || !strings.Contains(err.Error(), "no such memory") {
		t.Fatalf("after delete: %v", err)
	}
	// In a transaction it is queued and answered at EXEC.
	c := newTxConn(t, ts)
	c.do("MULTI\r\nMEM.HISTORY h 2\r\nEXEC\r\n", "+OK\r\n+QUEUED\r\n*1\r\n*0\r\n")
}

// TestMemHistoryReadOnlyUser: a read-only user may run MEM.HISTORY (but
// not MEM.REWARD).
func TestMemHistoryReadOnlyUser(t *testing.T) {
	db, err := engine.Open(t.TempDir(), engine.Options{Sync: wal.SyncNone, CheckpointInterval: -1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cfg := Config{Users: []User{{Name: DefaultUser, Password: "s3cret"}, {Name: "reader", Password: "r3ad", ReadOnly: true}}}
	ts := startServer(t, cfg, func(s *Server) { s.RegisterMem(db) })
	rw := redis.NewClient(&redis.Options{Addr: ts.addr, Password: "s3cret", MaxRetries: -1})
	ro := redis.NewClient(&redis.Options{Addr: ts.addr, Username: "reader", Password: "r3ad", MaxRetries: -1})
	t.Cleanup(func() { rw.Close(); ro.Close() })
	mustDo(t, rw, "MEM.CREATE", "h", "DIM", 2)
	mustDo(t, rw, "MEM.ADD", "h", "VALUES", 2, 1, 0)
	mustDo(t, rw, "MEM.REWARD", "h", 1, 1)
	if got := mustDo(t, ro, "MEM.HISTORY", "h", 1).([]any); len(got) != 1 {
		t.Fatalf("reader's MEM.HISTORY = %v", got)
	}
	if err := ro.Do(context.Background(), "MEM.REWARD", "h", 1, 1).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Fatalf("reader's MEM.REWARD: %v", err)
	}
}
