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

// policyServer is a server over a database in dir whose pruner looks every
// millisecond on a fake clock, reporting each run on runs.
type policyServer struct {
	ts   *testServer
	db   *engine.DB
	rdb  *redis.Client
	runs chan int
}

func startPolicyServer(t *testing.T, dir string, clock func() time.Time) *policyServer {
	t.Helper()
	ps := &policyServer{runs: make(chan int, 16)}
	db, err := engine.Open(dir, engine.Options{Sync: wal.SyncAlways, CheckpointInterval: -1, Logf: t.Logf,
		Now: clock, SweepInterval: -1, PruneInterval: time.Millisecond,
		OnPrune: func(_ string, n int) { ps.runs <- n }})
	if err != nil {
		t.Fatal(err)
	}
	ps.db = db
	ps.ts = startServer(t, Config{Users: []User{{Name: DefaultUser, Password: "pw"}, {Name: "ro", Password: "pr", ReadOnly: true}}},
		func(s *Server) { s.RegisterMem(db) })
	ps.rdb = redis.NewClient(&redis.Options{Addr: ps.ts.addr, MaxRetries: -1, Password: "pw"})
	t.Cleanup(func() { ps.rdb.Close(); db.Close() })
	return ps
}

// waitRun waits for the pruner's next run and returns its count.
func (ps *policyServer) waitRun(t *testing.T) int {
	t.Helper()
	select {
	case n := <-ps.runs:
		return n
	case <-time.After(20 * time.Second):
		t.Fatal("the pruner did not run")
	}
	return 0
}

// TestMemConfigPrune: MEM.CONFIG coll SET|GET PRUNE over the protocol: the
// policy set is the one GET and MEM.INFO show, the pruner applies it in
// the background (the test waits on the run, moving a fake clock), pruned
// memories are gone, OFF stops it, and it survives a restart.
func TestMemConfigPrune(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	dir := t.TempDir()
	ps := startPolicyServer(t, dir, clock)
	rdb := ps.rdb
	mustDo(t, rdb, "MEM.CREATE", "m", "DIM", 2, "METRIC", "L2")
	for i := 1; i <= 10; i++ {
		tenant := map[bool]string{true: "a", false: "b"}[i%2 == 1]
		mustDo(t, rdb, "MEM.ADD", "m", "VALUES", 2, i, 0, "ID", i, "Q", i, "ATTRS", fmt.Sprintf(`{"tenant":%q}`, tenant))
	}
	if v := mustDo(t, rdb, "MEM.CONFIG", "m", "GET", "PRUNE"); fmt.Sprint(v) != "[]" {
		t.Fatalf("GET PRUNE with no policy = %v", v)
	}
	if v := field(t, mustDo(t, rdb, "MEM.INFO", "m"), "prune_policy"); v != "" {
		t.Fatalf("prune_policy with none = %q", v)
	}
	if v := field(t, mustDo(t, rdb, "MEM.INFO", "m"), "last_prune"); fmt.Sprint(v) != "[0 0]" {
		t.Fatalf("last_prune before any = %v", v)
	}
	if v := mustDo(t, rdb, "MEM.CONFIG", "m", "set", "prune", "qbelow", "4.5", "FILTER", `.tenant == "a"`, "EVERY", 30); v != "OK" {
		t.Fatalf("SET PRUNE = %v", v)
	}
	want := `[qbelow 4.5 filter (.tenant == "a") every 30]`
	if v := mustDo(t, rdb, "MEM.CONFIG", "m", "GET", "PRUNE"); fmt.Sprint(v) != want {
		t.Fatalf("GET PRUNE = %v, want %v", v, want)
	}
	if v := field(t, mustDo(t, rdb, "MEM.INFO", "m"), "prune_policy"); v != `QBELOW 4.5 FILTER "(.tenant == \"a\")" EVERY 30` {
		t.Fatalf("prune_policy = %q", v)
	}
	advance(31 * time.Second)
	if n := ps.waitRun(t); n != 2 {
		t.Fatalf("background run pruned %d, want 2 (ids 1, 3)", n)
	}
	if v := mustDo(t, rdb, "MEM.COUNT", "m"); v != int64(8) {
		t.Fatalf("count after the run = %v", v)
	}
	for _, id := range []int{1, 3} {
		wantErr(t, rdb, "no such memory", "MEM.GET", "m", id)
	}
	if v := field(t, mustDo(t, rdb, "MEM.INFO", "m"), "last_prune"); fmt.Sprint(v) != fmt.Sprint([]any{clock().UnixMilli(), int64(2)}) {
		t.Fatalf("last_prune = %v", v)
	}

	// Restart: the policy and the last run come back.
	ps.rdb.Close()
	if err := ps.db.Close(); err != nil {
		t.Fatal(err)
	}
	ps = startPolicyServer(t, dir, clock)
	rdb = ps.rdb
	if v := mustDo(t, rdb, "MEM.CONFIG", "m", "GET", "PRUNE"); fmt.Sprint(v) != want {
		t.Fatalf("GET PRUNE after restart = %v", v)
	}
	if v := field(t, mustDo(t, rdb, "MEM.INFO", "m"), "last_prune"); fmt.Sprint(v) != fmt.Sprint([]any{clock().UnixMilli(), int64(2)}) {
		t.Fatalf("last_prune after restart = %v", v)
	}

	// OFF stops it; GET is empty again, and OFF twice is fine.
	mustDo(t, rdb, "MEM.CONFIG", "m", "SET", "PRUNE", "OFF")
	mustDo(t, rdb, "MEM.CONFIG", "m", "SET", "PRUNE", "off")
	if v := mustDo(t, rdb, "MEM.CONFIG", "m", "GET", "PRUNE"); fmt.Sprint(v) != "[]" {
		t.Fatalf("GET PRUNE after OFF = %v", v)
	}
	mustDo(t, rdb, "MEM.ADD", "m", "VALUES", 2, 1, 0, "ID", 1, "Q", 1, "ATTRS", `{"tenant":"a"}`)
	advance(time.Hour)
	if n, err := ps.db.RunPrunePolicies(); err != nil || n != 0 {
		t.Fatalf("a round after OFF: %d, %v", n, err)
	}
	if v := mustDo(t, rdb, "MEM.COUNT", "m"); v != int64(9) {
		t.Fatalf("count after OFF = %v", v)
	}
}

// TestMemConfigPruneRefused: bad policies get a clear ERR and change
// nothing (the policy in force stays); MEM.CONFIG is a write (a read-only
// user is refused, and it is queued inside MULTI).
func TestMemConfigPruneRefused(t *testing.T) {
	clock := func() time.Time { return time.Unix(1_800_000_000, 0) }
	ps := startPolicyServer(t, t.TempDir(), clock)
	rdb := ps.rdb
	mustDo(t, rdb, "MEM.CREATE", "m", "DIM", 2)
	mustDo(t, rdb, "MEM.CONFIG", "m", "SET", "PRUNE", "MAXCOUNT", 5)
	const want = "[maxcount 5 every 60]"
	for _, tc := range []struct {
		err  string
		args []any
	}{
		{"at least one of", []any{"m", "SET", "PRUNE"}},
		{"at least one of", []any{"m", "SET", "PRUNE", "EVERY", 10}},
		{"at least one of", []any{"m", "SET", "PRUNE", "FILTER", ".x == 1"}},
		{"MINVISITS needs QBELOW", []any{"m", "SET", "PRUNE", "MINVISITS", 1, "OLDER", 0}},
		{"finite number", []any{"m", "SET", "PRUNE", "QBELOW", "nan"}},
		{"non-negative integer", []any{"m", "SET", "PRUNE", "OLDER", -1}},
		{"at most", []any{"m", "SET", "PRUNE", "IDLE", "99999999999999"}},
		{"non-negative integer", []any{"m", "SET", "PRUNE", "MAXCOUNT", -1}},
		{"EVERY seconds must be at least 1", []any{"m", "SET", "PRUNE", "MAXCOUNT", 1, "EVERY", 0}},
		{"non-negative integer", []any{"m", "SET", "PRUNE", "MAXCOUNT", 1, "EVERY", "1.5"}},
		{"at most", []any{"m", "SET", "PRUNE", "MAXCOUNT", 1, "EVERY", "99999999999999"}},
		{"expected", []any{"m", "SET", "PRUNE", "MAXCOUNT", 1, "EVERY"}},
		{"DRYRUN has no meaning", []any{"m", "SET", "PRUNE", "MAXCOUNT", 1, "DRYRUN"}},
		{"OFF must be alone", []any{"m", "SET", "PRUNE", "OFF", "MAXCOUNT", 1}},
		{"OFF must be alone", []any{"m", "SET", "PRUNE", "MAXCOUNT", 1, "OFF"}},
		{"given twice", []any{"m", "SET", "PRUNE", "MAXCOUNT", 1, "EVERY", 5, "EVERY", 6}},
		{"unknown MEM.CONFIG SET PRUNE option", []any{"m", "SET", "PRUNE", "MAXCOUNT", 1, "ALL"}},
		{"", []any{"m", "SET", "PRUNE", "MAXCOUNT", 1, "FILTER", "(("}},
		{"unknown MEM.CONFIG setting", []any{"m", "SET", "TTL", 5}},
		{"SET or GET", []any{"m", "PUT", "PRUNE"}},
		{"wrong number of arguments", []any{"m", "GET", "PRUNE", "x"}},
		{"wrong number of arguments", []any{"m", "GET"}},
		{"no such collection", []any{"nope", "SET", "PRUNE", "MAXCOUNT", 1}},
		{"no such collection", []any{"nope", "GET", "PRUNE"}},
	} {
		wantErr(t, rdb, tc.err, append([]any{"MEM.CONFIG"}, tc.args...)...)
		if v := mustDo(t, rdb, "MEM.CONFIG", "m", "GET", "PRUNE"); fmt.Sprint(v) != want {
			t.Fatalf("%v changed the policy: %v", tc.args, v)
		}
	}

	// COMMAND lists it (name, arity -4: at least 3 arguments).
	if v := fmt.Sprint(mustDo(t, rdb, "COMMAND", "INFO", "mem.config")); !strings.HasPrefix(v, "[[mem.config -4 ") {
		t.Fatalf("COMMAND INFO mem.config = %v", v)
	}
	// A read-only user may not run it; inside MULTI it is queued and runs
	// at EXEC.
	ro := redis.NewClient(&redis.Options{Addr: ps.ts.addr, MaxRetries: -1, Username: "ro", Password: "pr"})
	defer ro.Close()
	if err := ro.Do(context.Background(), "MEM.CONFIG", "m", "GET", "PRUNE").Err(); err == nil || err.Error()[:6] != "NOPERM" {
		t.Fatalf("read-only MEM.CONFIG: %v, want NOPERM", err)
	}
	ctx := context.Background()
	cmds, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "MEM.CONFIG", "m", "SET", "PRUNE", "QBELOW", 0)
		p.Do(ctx, "MEM.CONFIG", "m", "GET", "PRUNE")
		return nil
	})
	if err != nil || fmt.Sprint(cmds[1].(*redis.Cmd).Val()) != "[qbelow 0 every 60]" {
		t.Fatalf("MULTI: %v, %v", cmds, err)
	}
}
