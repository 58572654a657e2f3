package server

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/wal"
)

// getFields runs MEM.GET and returns its field/value reply as a map.
func getFields(t *testing.T, rdb *redis.Client, args ...any) map[string]any {
	t.Helper()
	v := mustDo(t, rdb, append([]any{"MEM.GET"}, args...)...).([]any)
	m := map[string]any{}
	for i := 0; i+1 < len(v); i += 2 {
		m[v[i].(string)] = v[i+1]
	}
	return m
}

// TestMemAttrsCommands: ATTRS at add, SETATTR (replace, remove), GETATTR,
// SETPAYLOAD, and the fields MEM.GET and MEM.RETRIEVE … WITHATTRS
// WITHKEYS report, by id and by KEY.
func TestMemAttrsCommands(t *testing.T) {
	ts, _ := startMem(t)
	rdb := ts.client(t)
	mustDo(t, rdb, "MEM.CREATE", "m", "DIM", 2, "METRIC", "L2")
	if v := mustDo(t, rdb, "MEM.ADD", "m", "VALUES", 2, 1, 0, "ATTRS", `{ "user": "u7", "tags": ["plan"] }`, "KEY", "task-1", "PAYLOAD", "p1"); v != int64(1) {
		t.Fatalf("MEM.ADD = %v", v)
	}
	mustDo(t, rdb, "MEM.ADD", "m", "VALUES", 2, 0, 1)
	if v := mustDo(t, rdb, "MEM.GETATTR", "m", 1); v != `{"user":"u7","tags":["plan"]}` {
		t.Fatalf("MEM.GETATTR = %q", v)
	}
	if v := mustDo(t, rdb, "MEM.GETATTR", "m", "KEY", "task-1"); v != `{"user":"u7","tags":["plan"]}` {
		t.Fatalf("MEM.GETATTR KEY = %q", v)
	}
	if err := rdb.Do(context.Background(), "MEM.GETATTR", "m", 2).Err(); err != redis.Nil {
		t.Fatalf("MEM.GETATTR of a memory without attributes: %v, want nil", err)
	}
	g := getFields(t, rdb, "m", "KEY", "task-1")
	if g["id"] != int64(1) || g["key"] != "task-1" || g["attrs"] != `{"user":"u7","tags":["plan"]}` || g["payload"] != "p1" || g["expires"] != nil {
		t.Fatalf("MEM.GET KEY task-1 = %v", g)
	}
	if g := getFields(t, rdb, "m", 2); g["key"] != nil || g["attrs"] != nil {
		t.Fatalf("MEM.GET 2 = %v", g)
	}
	if v := mustDo(t, rdb, "MEM.SETATTR", "m", "KEY", "task-1", `{"user":"u8"}`); v != "OK" {
		t.Fatalf("MEM.SETATTR = %v", v)
	}
	mustDo(t, rdb, "MEM.SETATTR", "m", 2, `{"n":2}`)
	if v := mustDo(t, rdb, "MEM.SETPAYLOAD", "m", "KEY", "task-1", "new payload"); v != "OK" {
		t.Fatalf("MEM.SETPAYLOAD = %v", v)
	}
	rows := mustDo(t, rdb, "MEM.RETRIEVE", "m", "VALUES", 2, 1, 0, "K2", 2, "LAMBDA", 0, "WITHPAYLOAD", "WITHATTRS", "WITHKEYS").([]any)
	if got := fmt.Sprint(rows[0].([]any)[4:]); got != `[new payload {"user":"u8"} task-1]` {
		t.Fatalf("first row's payload, attrs, key: %s", got)
	}
	if got := fmt.Sprint(rows[1].([]any)[4:]); got != `[ {"n":2} <nil>]` {
		t.Fatalf("second row's payload, attrs, key: %s", got)
	}
	rows = mustDo(t, rdb, "MEM.RETRIEVE", "m", "VALUES", 2, 1, 0, "LAMBDA", 0, "WITHKEYS").([]any)
	if r := rows[0].([]any); len(r) != 5 || r[4] != "task-1" {
		t.Fatalf("row with WITHKEYS only: %v", r)
	}
	rows = mustDo(t, rdb, "MEM.RETRIEVE", "m", "VALUES", 2, 1, 0, "LAMBDA", 0).([]any)
	if r := rows[0].([]any); len(r) != 4 {
		t.Fatalf("a plain row grew: %v", r)
	}
	// An empty string removes the attributes.
	mustDo(t, rdb, "MEM.SETATTR", "m", 1, "")
	if err := rdb.Do(context.Background(), "MEM.GETATTR", "m", 1).Err(); err != redis.Nil {
		t.Fatalf("after SETATTR \"\": %v", err)
	}
}

// TestMemKeysCommands: every command that takes an id takes KEY k; a key in
// use is refused; DEL frees it; REWARD and DEL mix ids and keys.
func TestMemKeysCommands(t *testing.T) {
	ts, _ := startMem(t)
	rdb := ts.client(t)
	mustDo(t, rdb, "MEM.CREATE", "m", "DIM", 2, "ALPHA", 1)
	mustDo(t, rdb, "MEM.ADD", "m", "VALUES", 2, 1, 0, "KEY", "a")
	mustDo(t, rdb, "MEM.ADD", "m", "VALUES", 2, 0, 1, "KEY", "b")
	mustDo(t, rdb, "MEM.ADD", "m", "VALUES", 2, 1, 1)
	wantErr(t, rdb, "memory key already exists", "MEM.ADD", "m", "VALUES", 2, 1, 0, "KEY", "a")
	long := strings.Repeat("k", engine.MaxKeyLen+1)
	wantErr(t, rdb, "invalid key", "MEM.ADD", "m", "VALUES", 2, 1, 0, "KEY", long)
	wantErr(t, rdb, "invalid key", "MEM.ADD", "m", "VALUES", 2, 1, 0, "KEY", "")
	wantErr(t, rdb, "invalid key", "MEM.GET", "m", "KEY", long)
	wantErr(t, rdb, "invalid key", "MEM.DEL", "m", "KEY", long)
	if in := mustDo(t, rdb, "MEM.INFO", "m").([]any); in[7] != int64(3) {
		t.Fatalf("refused adds changed the count: %v", in)
	}
	if v := mustDo(t, rdb, "MEM.REWARD", "m", 1, "KEY", "a", 3); fmt.Sprint(v) != "[1 1]" {
		t.Fatalf("MEM.REWARD KEY a 3 = %v", v)
	}
	wantErr(t, rdb, `no such memory: key "nope"`, "MEM.REWARD", "m", 1, "KEY", "b", "KEY", "nope")
	wantErr(t, rdb, `no such memory: key "NEXTQ"`, "MEM.REWARD", "m", 1, "KEY", "NEXTQ")
	wantErr(t, rdb, "syntax error", "MEM.REWARD", "m", 1, 3, "KEY")
	if g := getFields(t, rdb, "m", "KEY", "b"); g["visits"] != int64(0) {
		t.Fatalf("a refused reward changed b: %v", g)
	}
	if v := mustDo(t, rdb, "MEM.REWARD", "m", 1, "KEY", "b", "NEXTQ", 0); fmt.Sprint(v) != "[1]" {
		t.Fatalf("MEM.REWARD KEY b NEXTQ 0 = %v", v)
	}
	wantErr(t, rdb, `no such memory: key "nope"`, "MEM.GET", "m", "KEY", "nope")
	wantErr(t, rdb, `unknown MEM.GET option "extra"`, "MEM.GET", "m", "KEY", "a", "extra")
	wantErr(t, rdb, "wrong number of arguments", "MEM.GET", "m", "KEY", "a", "WITHVECTOR", "extra")
	wantErr(t, rdb, "syntax error: key after KEY expected", "MEM.GET", "m", "KEY")
	if v := mustDo(t, rdb, "MEM.DEL", "m", "KEY", "a", 3, "KEY", "nope", "KEY", "a"); v != int64(2) {
		t.Fatalf("MEM.DEL = %v", v)
	}
	// The key is free again.
	if v := mustDo(t, rdb, "MEM.ADD", "m", "VALUES", 2, 1, 0, "KEY", "a"); v != int64(4) {
		t.Fatalf("re-add of a deleted key = %v", v)
	}
	if g := getFields(t, rdb, "m", "KEY", "a"); g["id"] != int64(4) || g["visits"] != int64(0) {
		t.Fatalf("MEM.GET KEY a = %v", g)
	}
}

// startMemClock is startMem with a fake clock for expiry.
func startMemClock(t *testing.T, now func() time.Time) *testServer {
	t.Helper()
	db, err := engine.Open(t.TempDir(), engine.Options{Sync: wal.SyncNone, CheckpointInterval: -1, Logf: t.Logf,
		Now: now, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, Config{}, func(s *Server) { s.RegisterMem(db) })
	t.Cleanup(func() { db.Close() })
	return ts
}

// TestMemExpiryCommands: TTL at add, MEM.EXPIRE (set, replace, 0 deletes),
// MEM.PERSIST, MEM.TTL, MEM.GET's expires; expired memories are never
// returned; bad TTLs are refused.
func TestMemExpiryCommands(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	ts := startMemClock(t, clock)
	rdb := ts.client(t)
	mustDo(t, rdb, "MEM.CREATE", "m", "DIM", 2, "METRIC", "L2")
	mustDo(t, rdb, "MEM.ADD", "m", "VALUES", 2, 1, 0, "KEY", "a", "TTL", 100)
	mustDo(t, rdb, "MEM.ADD", "m", "VALUES", 2, 0, 1, "KEY", "b")
	mustDo(t, rdb, "MEM.ADD", "m", "VALUES", 2, 1, 1, "KEY", "c")
	for _, bad := range []any{0, -5, "ten", "1.5", int64(engine.MaxTTL/time.Second) + 1} {
		wantErr(t, rdb, "TTL must be", "MEM.ADD", "m", "VALUES", 2, 1, 0, "TTL", bad)
	}
	wantErr(t, rdb, "TTL must be", "MEM.EXPIRE", "m", "KEY", "b", "soon")
	if v := mustDo(t, rdb, "MEM.TTL", "m", "KEY", "a"); v != int64(100) {
		t.Fatalf("MEM.TTL a = %v", v)
	}
	if g := getFields(t, rdb, "m", "KEY", "a"); g["expires"] != now.Add(100*time.Second).UnixMilli() {
		t.Fatalf("MEM.GET a expires %v", g["expires"])
	}
	if v := mustDo(t, rdb, "MEM.TTL", "m", "KEY", "b"); v != int64(-1) {
		t.Fatalf("MEM.TTL b = %v", v)
	}
	if v := mustDo(t, rdb, "MEM.EXPIRE", "m", "KEY", "b", 50); v != int64(1) {
		t.Fatalf("MEM.EXPIRE = %v", v)
	}
	if v := mustDo(t, rdb, "MEM.PERSIST", "m", "KEY", "b"); v != int64(1) {
		t.Fatalf("MEM.PERSIST = %v", v)
	}
	if v := mustDo(t, rdb, "MEM.PERSIST", "m", "KEY", "b"); v != int64(0) {
		t.Fatalf("second MEM.PERSIST = %v", v)
	}
	if v := mustDo(t, rdb, "MEM.EXPIRE", "m", "KEY", "c", 0); v != int64(1) {
		t.Fatalf("MEM.EXPIRE 0 = %v", v)
	}
	wantErr(t, rdb, "no such memory", "MEM.GET", "m", "KEY", "c")
	wantErr(t, rdb, "no such memory", "MEM.EXPIRE", "m", "KEY", "c", 10)
	advance(100 * time.Second)
	wantErr(t, rdb, "no such memory", "MEM.GET", "m", "KEY", "a")
	wantErr(t, rdb, "no such memory", "MEM.TTL", "m", 1)
	rows := mustDo(t, rdb, "MEM.RETRIEVE", "m", "VALUES", 2, 1, 0, "K1", 10, "WITHKEYS").([]any)
	if len(rows) != 1 || rows[0].([]any)[4] != "b" {
		t.Fatalf("retrieval after a expired: %v", rows)
	}
	// Its key is free at once.
	mustDo(t, rdb, "MEM.ADD", "m", "VALUES", 2, 1, 0, "KEY", "a")
}

// TestMemAttrsBadInput: malformed or oversized attributes, unknown
// memories and wrong arities are ERRs that change nothing.
func TestMemAttrsBadInput(t *testing.T) {
	ts, _ := startMem(t)
	rdb := ts.client(t)
	mustDo(t, rdb, "MEM.CREATE", "m", "DIM", 2)
	mustDo(t, rdb, "MEM.ADD", "m", "VALUES", 2, 1, 0, "ATTRS", `{"a":1}`)
	for _, bad := range []string{`{"a":`, `[1]`, `"x"`, `{"a":1} junk`, `{"a":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`,
		`{"a":"` + strings.Repeat("x", engine.MaxAttrs) + `"}`} {
		wantErr(t, rdb, "invalid attributes", "MEM.ADD", "m", "VALUES", 2, 1, 0, "ATTRS", bad)
		wantErr(t, rdb, "invalid attributes", "MEM.SETATTR", "m", 1, bad)
	}
	if v := mustDo(t, rdb, "MEM.GETATTR", "m", 1); v != `{"a":1}` {
		t.Fatalf("attributes after refused changes: %v", v)
	}
	if in := mustDo(t, rdb, "MEM.INFO", "m").([]any); in[7] != int64(1) {
		t.Fatalf("refused adds changed the count: %v", in)
	}
	wantErr(t, rdb, "no such memory", "MEM.SETATTR", "m", 9, `{}`)
	wantErr(t, rdb, "no such memory", "MEM.GETATTR", "m", 9)
	wantErr(t, rdb, "no such memory", "MEM.SETPAYLOAD", "m", 9, "x")
	wantErr(t, rdb, "wrong number of arguments", "MEM.SETATTR", "m", 1)
	wantErr(t, rdb, "wrong number of arguments", "MEM.SETATTR", "m", 1, `{}`, "extra")
	wantErr(t, rdb, "wrong number of arguments", "MEM.GETATTR", "m", 1, "extra")
	wantErr(t, rdb, "memory id must be", "MEM.GETATTR", "m", "one")
	wantErr(t, rdb, "no such collection", "MEM.SETATTR", "nope", 1, `{}`)
}

// TestMemWithAttrsReplySize: a retrieval whose attributes would make the
// reply larger than MaxReplyBytes is refused before anything is written.
func TestMemWithAttrsReplySize(t *testing.T) {
	db, err := engine.Open(t.TempDir(), engine.Options{Sync: wal.SyncNone, CheckpointInterval: -1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ts := startServer(t, Config{MaxReplyBytes: 8 << 10}, func(s *Server) { s.RegisterMem(db) })
	rdb := ts.client(t)
	mustDo(t, rdb, "MEM.CREATE", "m", "DIM", 2)
	attrs := `{"a":"` + strings.Repeat("x", 1000) + `"}`
	for i := 0; i < 10; i++ {
		mustDo(t, rdb, "MEM.ADD", "m", "VALUES", 2, 1, i, "ATTRS", attrs)
	}
	wantErr(t, rdb, "more than the limit", "MEM.RETRIEVE", "m", "VALUES", 2, 1, 0, "K1", 10, "K2", 10, "WITHATTRS")
	if rows := mustDo(t, rdb, "MEM.RETRIEVE", "m", "VALUES", 2, 1, 0, "K1", 10, "K2", 4, "WITHATTRS").([]any); len(rows) != 4 {
		t.Fatalf("%d rows", len(rows))
	}
	if rows := mustDo(t, rdb, "MEM.RETRIEVE", "m", "VALUES", 2, 1, 0, "K1", 10, "K2", 10).([]any); len(rows) != 10 {
		t.Fatalf("%d rows", len(rows))
	}
}

// TestMemReplaceByKeyInTx: the documented way to replace a memory under
// its key, MEM.DEL … KEY k then MEM.ADD … KEY k in one MULTI/EXEC (here
// go-redis TxPipelined), swaps it in one step.
func TestMemReplaceByKeyInTx(t *testing.T) {
	ts, _ := startMem(t)
	rdb := ts.client(t)
	ctx := context.Background()
	mustDo(t, rdb, "MEM.CREATE", "m", "DIM", 2)
	mustDo(t, rdb, "MEM.ADD", "m", "VALUES", 2, 1, 0, "KEY", "task-7", "ATTRS", `{"v":1}`)
	cmds, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "MEM.DEL", "m", "KEY", "task-7")
		p.Do(ctx, "MEM.ADD", "m", "VALUES", 2, 0, 1, "KEY", "task-7", "ATTRS", `{"v":2}`)
		return nil
	})
	if err != nil || len(cmds) != 2 {
		t.Fatalf("TxPipelined: %v (%d replies)", err, len(cmds))
	}
	if n, _ := cmds[0].(*redis.Cmd).Int64(); n != 1 {
		t.Fatalf("MEM.DEL in the transaction deleted %d", n)
	}
	id, _ := cmds[1].(*redis.Cmd).Int64()
	if g := getFields(t, rdb, "m", "KEY", "task-7"); g["id"] != id || g["attrs"] != `{"v":2}` {
		t.Fatalf("after the transaction: %v, want id %d", g, id)
	}
}
