package server

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/vfs"
	"github.com/memrl/memrl/wal"
)

// TestMemCompactCommand: MEM.COMPACT over the protocol: WAIT replies with
// the figures once done, the deleted memories stay gone to MEM.GET,
// MEM.SCAN and MEM.RETRIEVE (also after a restart), MEM.INFO shows the
// compaction fields, and bad calls get an ERR that changes nothing.
func TestMemCompactCommand(t *testing.T) {
	fs := vfs.NewMemFS()
	open := func() *engine.DB {
		db, err := engine.Open("/db", engine.Options{FS: fs, Sync: wal.SyncAlways, CheckpointInterval: -1,
			CheckpointBytes: -1, CompactShare: -1, Logf: t.Logf})
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	db := open()
	ts := startServer(t, Config{}, func(s *Server) { s.RegisterMem(db) })
	rdb := ts.client(t)
	mustDo(t, rdb, "MEM.CREATE", "m", "DIM", 2, "METRIC", "L2")
	for i := 1; i <= 20; i++ {
		mustDo(t, rdb, "MEM.ADD", "m", "VALUES", 2, i, 0, "PAYLOAD", strings.Repeat("x", 100))
	}
	for i := 1; i <= 20; i += 2 {
		mustDo(t, rdb, "MEM.DEL", "m", i)
	}
	info := mustDo(t, rdb, "MEM.INFO", "m")
	if field(t, info, "deleted_rows") != int64(10) || field(t, info, "compacting") != int64(0) {
		t.Fatalf("MEM.INFO before: %v", info)
	}
	before := field(t, info, "disk_bytes").(int64)

	for _, bad := range [][]any{
		{"MEM.COMPACT", "m", "NOW"},
		{"MEM.COMPACT", "m", "WAIT", "x"},
		{"MEM.COMPACT", "nosuch"},
		{"MEM.COMPACT"},
	} {
		if err := rdb.Do(context.Background(), bad...).Err(); err == nil || !strings.HasPrefix(err.Error(), "ERR") {
			t.Fatalf("%v: %v, want an ERR", bad, err)
		}
	}

	r := mustDo(t, rdb, "MEM.COMPACT", "m", "WAIT")
	if field(t, r, "rows_before") != int64(20) || field(t, r, "rows_after") != int64(10) {
		t.Fatalf("MEM.COMPACT WAIT = %v", r)
	}
	if b := field(t, r, "bytes_after").(int64); b >= field(t, r, "bytes_before").(int64) || field(t, r, "bytes_before") != before {
		t.Fatalf("MEM.COMPACT WAIT = %v (disk_bytes before %d)", r, before)
	}
	if _, ok := field(t, r, "seconds").(string); !ok {
		t.Fatalf("seconds is not a bulk float: %v", r)
	}
	info = mustDo(t, rdb, "MEM.INFO", "m")
	if field(t, info, "deleted_rows") != int64(0) || field(t, info, "rows") != int64(10) {
		t.Fatalf("MEM.INFO after: %v", info)
	}
	checkGone := func() {
		t.Helper()
		for i := 1; i <= 20; i++ {
			v := mustDo(t, rdb, "MEM.MGET", "m", i)
			if (fmt.Sprint(v) == "[<nil>]") != (i%2 == 1) {
				t.Fatalf("memory %d after compaction: %v", i, v)
			}
		}
		scan := mustDo(t, rdb, "MEM.SCAN", "m", 0, "COUNT", 100).([]any)
		if len(scan[1].([]any)) != 10 {
			t.Fatalf("scan: %v", scan)
		}
		for _, m := range scan[1].([]any) {
			if id := field(t, m, "id").(int64); id%2 == 1 {
				t.Fatalf("scan lists deleted memory %v", id)
			}
		}
		res := mustDo(t, rdb, "MEM.RETRIEVE", "m", "VALUES", 2, 1, 0, "K1", 20, "K2", 20).([]any)
		if len(res) != 10 {
			t.Fatalf("retrieve: %d results, want 10: %v", len(res), res)
		}
	}
	checkGone()

	// Without WAIT: +OK at once; MEM.INFO says when it is done.
	if v := mustDo(t, rdb, "MEM.COMPACT", "m"); v != "OK" {
		t.Fatalf("MEM.COMPACT = %v", v)
	}
	deadline := time.Now().Add(30 * time.Second)
	for field(t, mustDo(t, rdb, "MEM.INFO", "m"), "compacting") != int64(0) {
		if time.Now().After(deadline) {
			t.Fatal("compaction did not end")
		}
		time.Sleep(5 * time.Millisecond)
	}
	checkGone()

	// Inside MULTI: a write, queued; WAIT is refused at EXEC.
	c := newTxConn(t, ts)
	c.do("MULTI\r\nMEM.COMPACT m WAIT\r\nMEM.COMPACT m\r\nEXEC\r\n", "+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n-ERR "+errCompactWaitInExec.Error()+"\r\n+OK\r\n")

	// After a restart from the compacted checkpoint.
	ts.Shutdown(context.Background())
	deadline = time.Now().Add(30 * time.Second)
	for {
		cl, _ := db.Collection("m")
		if !cl.Compacting() || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = open()
	defer db.Close()
	ts = startServer(t, Config{}, func(s *Server) { s.RegisterMem(db) })
	rdb = ts.client(t)
	checkGone()
}

// TestMemCompactIsAWrite: COMMAND knows MEM.COMPACT, and a read-only user
// may not run it (it rewrites files).
func TestMemCompactIsAWrite(t *testing.T) {
	db, err := engine.Open(t.TempDir(), engine.Options{Sync: wal.SyncNone, CheckpointInterval: -1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ts := startServer(t, Config{Users: []User{{Name: DefaultUser, Password: "pw"}, {Name: "ro", Password: "pr", ReadOnly: true}}},
		func(s *Server) { s.RegisterMem(db) })
	c := newTxConn(t, ts)
	c.do("AUTH pw\r\nMEM.CREATE m DIM 2\r\nCOMMAND COUNT\r\n", "+OK\r\n+OK\r\n")
	if _, err := readReply(c.br); err != nil {
		t.Fatal(err)
	}
	c.do("AUTH ro pr\r\nMEM.COMPACT m\r\n", "+OK\r\n-NOPERM User ro has no permissions to run the 'mem.compact' command\r\n")
	io.WriteString(c.nc, "COMMAND INFO mem.compact\r\n")
	r, err := readReply(c.br)
	if err != nil || !strings.Contains(fmt.Sprint(r), "mem.compact") {
		t.Fatalf("COMMAND INFO mem.compact = %v, %v", r, err)
	}
}
