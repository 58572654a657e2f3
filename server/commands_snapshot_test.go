package server

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/wal"
)

// startMemDir serves a database at dir (a restart reopens the same dir).
func startMemDir(t *testing.T, dir string, cfg Config) (*testServer, *engine.DB) {
	t.Helper()
	db, err := engine.Open(dir, engine.Options{Sync: wal.SyncAlways, CheckpointInterval: -1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, cfg, func(s *Server) { s.RegisterMem(db) })
	return ts, db
}

// TestMemSnapshotCommands: MEM.SNAPSHOT, MEM.SNAPSHOTS, MEM.ROLLBACK and
// MEM.DELSNAPSHOT through the protocol: a deleted memory and one pruned
// stay gone until the rollback, which brings back their Q, visits and
// attributes and removes the memory added after the snapshot; the catalog
// and a rollback survive a restart; MEM.INFO counts the snapshots.
func TestMemSnapshotCommands(t *testing.T) {
	dir := t.TempDir()
	ts, db := startMemDir(t, dir, Config{})
	rdb := ts.client(t)
	mustDo(t, rdb, "MEM.CREATE", "m", "DIM", 2, "METRIC", "L2")
	for i := 1; i <= 4; i++ {
		mustDo(t, rdb, "MEM.ADD", "m", "VALUES", 2, i, 0, "Q", i-2, "ATTRS", fmt.Sprintf(`{"n":%d}`, i), "KEY", fmt.Sprint("k", i))
	}
	mustDo(t, rdb, "MEM.REWARD", "m", 1, 3)
	before := fmt.Sprint(mustDo(t, rdb, "MEM.MGET", "m", 1, 2, 3, 4))
	if v := mustDo(t, rdb, "MEM.SNAPSHOT", "m", "good point"); v != "OK" {
		t.Fatalf("MEM.SNAPSHOT = %v", v)
	}
	wantErr(t, rdb, "snapshot already exists", "MEM.SNAPSHOT", "m", "good point")
	wantErr(t, rdb, "invalid snapshot name", "MEM.SNAPSHOT", "m", "")
	wantErr(t, rdb, "invalid snapshot name", "MEM.SNAPSHOT", "m", strings.Repeat("x", 129))
	wantErr(t, rdb, "no such collection", "MEM.SNAPSHOT", "nope", "s")
	wantErr(t, rdb, "wrong number of arguments", "MEM.SNAPSHOT", "m")
	wantErr(t, rdb, "wrong number of arguments", "MEM.SNAPSHOT", "m", "a", "b")

	list := mustDo(t, rdb, "MEM.SNAPSHOTS", "m").([]any)
	if len(list) != 1 {
		t.Fatalf("MEM.SNAPSHOTS = %v", list)
	}
	e := list[0].([]any)
	if e[0] != "good point" || e[2] != int64(4) || e[1].(int64) < 1_600_000_000_000 {
		t.Fatalf("MEM.SNAPSHOTS entry = %v", e)
	}

	// A bad strategy: deletes, a prune, rewards, new memories.
	mustDo(t, rdb, "MEM.DEL", "m", 2)
	if n := mustDo(t, rdb, "MEM.PRUNE", "m", "QBELOW", 0); n != int64(1) { // memory 1, Q -1
		t.Fatalf("prune = %v", n)
	}
	mustDo(t, rdb, "MEM.REWARD", "m", -10, 3, 4)
	mustDo(t, rdb, "MEM.SETATTR", "m", 3, `{"n":"bad"}`)
	mustDo(t, rdb, "MEM.ADD", "m", "VALUES", 2, 9, 9, "ID", 9, "KEY", "k2")
	wantErr(t, rdb, "held by a snapshot", "MEM.ADD", "m", "VALUES", 2, 1, 1, "ID", 2)
	if v := fmt.Sprint(mustDo(t, rdb, "MEM.MGET", "m", 1, 2)); v != "[<nil> <nil>]" {
		t.Fatalf("deleted and pruned memories visible: %v", v)
	}
	if n := mustDo(t, rdb, "MEM.COUNT", "m"); n != int64(3) {
		t.Fatalf("MEM.COUNT = %v", n)
	}
	res := fmt.Sprint(mustDo(t, rdb, "MEM.RETRIEVE", "m", "VALUES", 2, 1, 0, "K1", 10, "K2", 10))
	if strings.Contains(res, "[1 ") || strings.Contains(res, "[2 ") {
		t.Fatalf("retrieval returns a deleted memory: %v", res)
	}
	info := fmt.Sprint(mustDo(t, rdb, "MEM.INFO", "m"))
	if !strings.Contains(info, "snapshots 1") {
		t.Fatalf("MEM.INFO = %v", info)
	}

	// A restart keeps the snapshot and the ghosts.
	db.Close()
	ts, db = startMemDir(t, dir, Config{})
	defer db.Close()
	rdb = ts.client(t)
	if v := fmt.Sprint(mustDo(t, rdb, "MEM.MGET", "m", 1, 2)); v != "[<nil> <nil>]" {
		t.Fatalf("after restart, deleted and pruned memories visible: %v", v)
	}
	// 2 revived (1, 2), 2 restored (3, 4), 1 removed (9).
	if n := mustDo(t, rdb, "MEM.ROLLBACK", "m", "good point"); n != int64(5) {
		t.Fatalf("MEM.ROLLBACK = %v", n)
	}
	if after := fmt.Sprint(mustDo(t, rdb, "MEM.MGET", "m", 1, 2, 3, 4)); after != before {
		t.Fatalf("after rollback:\n%v\nwant\n%v", after, before)
	}
	if v := fmt.Sprint(mustDo(t, rdb, "MEM.MGET", "m", 9)); v != "[<nil>]" {
		t.Fatalf("memory added after the snapshot: %v", v)
	}
	if n := mustDo(t, rdb, "MEM.ROLLBACK", "m", "good point"); n != int64(0) {
		t.Fatalf("second MEM.ROLLBACK = %v", n)
	}
	wantErr(t, rdb, "no such snapshot", "MEM.ROLLBACK", "m", "nope")
	wantErr(t, rdb, "wrong number of arguments", "MEM.ROLLBACK", "m")
	if n := mustDo(t, rdb, "MEM.DELSNAPSHOT", "m", "good point"); n != int64(1) {
		t.Fatalf("MEM.DELSNAPSHOT = %v", n)
	}
	if n := mustDo(t, rdb, "MEM.DELSNAPSHOT", "m", "good point"); n != int64(0) {
		t.Fatalf("second MEM.DELSNAPSHOT = %v", n)
	}
	if v := mustDo(t, rdb, "MEM.SNAPSHOTS", "m").([]any); len(v) != 0 {
		t.Fatalf("MEM.SNAPSHOTS after delete = %v", v)
	}
	wantErr(t, rdb, "no such collection", "MEM.SNAPSHOTS", "nope")
}

// TestMemSnapshotWritesInTransactionsAndAuth: MEM.SNAPSHOT, MEM.ROLLBACK
// and MEM.DELSNAPSHOT are writes (queued in MULTI, refused to a read-only
// user); MEM.SNAPSHOTS is a read.
func TestMemSnapshotWritesInTransactionsAndAuth(t *testing.T) {
	cfg := Config{Users: []User{{Name: DefaultUser, Password: "s3cret"}, {Name: "reader", Password: "r3ad", ReadOnly: true}}}
	ts, db := startMemDir(t, t.TempDir(), cfg)
	defer db.Close()
	s := newRawSession(t, ts)
	for _, tc := range []struct {
		args []string
		want string
		more int // lines of the reply after the first
	}{
		{[]string{"AUTH", "s3cret"}, "+OK", 0},
		{[]string{"MEM.CREATE", "m", "DIM", "2"}, "+OK", 0},
		{[]string{"MEM.ADD", "m", "VALUES", "2", "1", "0"}, ":1", 0},
		{[]string{"MULTI"}, "+OK", 0},
		{[]string{"MEM.SNAPSHOT", "m", "a"}, "+QUEUED", 0},
		{[]string{"MEM.DEL", "m", "1"}, "+QUEUED", 0},
		{[]string{"MEM.ROLLBACK", "m", "a"}, "+QUEUED", 0},
		{[]string{"MEM.DELSNAPSHOT", "m", "a"}, "+QUEUED", 0},
		{[]string{"EXEC"}, "*4\r\n+OK\r\n:1\r\n:1\r\n:1", 4},
		{[]string{"MEM.SNAPSHOT", "m", "b"}, "+OK", 0},
		{[]string{"AUTH", "reader", "r3ad"}, "+OK", 0},
		{[]string{"MEM.SNAPSHOTS", "m"}, "*1\r\n*3\r\n$1\r\nb\r\n:", 5},
		{[]string{"MEM.SNAPSHOT", "m", "c"}, "-NOPERM User reader has no permissions to run the 'mem.snapshot' command", 0},
		{[]string{"MEM.ROLLBACK", "m", "b"}, "-NOPERM User reader has no permissions to run the 'mem.rollback' command", 0},
		{[]string{"MEM.DELSNAPSHOT", "m", "b"}, "-NOPERM User reader has no permissions to run the 'mem.delsnapshot' command", 0},
	} {
		got := s.do(tc.args...)
		for range tc.more {
			got += "\r\n" + s.line()
		}
		if !strings.HasPrefix(got, tc.want) {
			t.Fatalf("%q: got %q, want %q…", tc.args, got, tc.want)
		}
	}
	rdb := ts.client(t)
	_ = rdb.Do(context.Background(), "AUTH", "s3cret").Err()
	if v := fmt.Sprint(mustDo(t, rdb, "MEM.MGET", "m", 1)); v == "[<nil>]" {
		t.Fatalf("memory 1 not restored by the queued rollback: %v", v)
	}
}
