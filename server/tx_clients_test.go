package server

import (
	"context"
	"errors"
	"io"
	"math/rand"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/vfs"
)

// TestTxWritesShareOneFsync: a transaction's writes do not wait for an
// fsync each; EXEC's reply waits for one covering them all, and every
// write it acknowledges is on disk when it arrives (a crash copy taken at
// that moment, dropping unsynced data, holds them).
func TestTxWritesShareOneFsync(t *testing.T) {
	const delay, n = 20 * time.Millisecond, 20
	ts, db, fs := startMemFS(t, delay)
	c := newTxConn(t, ts)
	var req strings.Builder
	req.WriteString("MULTI\r\n")
	for i := 0; i < n; i++ {
		req.WriteString(rewardCmd(1))
	}
	req.WriteString("EXEC\r\n")
	syncs := db.WALStats().Syncs
	begin := time.Now()
	io.WriteString(c.nc, req.String())
	for i := 0; i < n+1; i++ { // +OK, +QUEUED × n
		if _, err := readReply(c.br); err != nil {
			t.Fatal(err)
		}
	}
	r, err := readReply(c.br)
	took := time.Since(begin)
	if err != nil {
		t.Fatal(err)
	}
	crashed := fs.Crash(vfs.DropUnsynced, rand.New(rand.NewSource(1)))
	if a, ok := r.([]any); !ok || len(a) != n {
		t.Fatalf("EXEC: %v", r)
	}
	if got := db.WALStats().Syncs - syncs; got > 2 {
		t.Errorf("a transaction of %d writes took %d fsyncs before its reply (%v), want 1 (2 if the first write's batch was already being synced)", n, got, took)
	}
	t.Logf("EXEC of %d rewards answered after %v with fsyncs of %v", n, took, delay)
	db2, err := engine.Open("/db", engine.Options{FS: crashed, CheckpointInterval: -1, CheckpointBytes: -1, Logf: func(string, ...any) {}})
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	c2, _ := db2.Collection("k")
	if m, err := c2.Get(1); err != nil || m.Visits != n {
		t.Fatalf("EXEC acknowledged %d rewards; the crashed disk holds %d (%v)", n, m.Visits, err)
	}
}

// TestTxFailedFsyncSendsNoReply: if the fsync covering a transaction's
// writes fails, the client never sees EXEC's reply: the connection is
// closed.
func TestTxFailedFsyncSendsNoReply(t *testing.T) {
	ts, _, fs := startMemFS(t, time.Millisecond)
	c := newTxConn(t, ts)
	fs.FailNextSync("wal")
	io.WriteString(c.nc, "MULTI\r\n"+rewardCmd(1)+rewardCmd(1)+"EXEC\r\n")
	got, err := io.ReadAll(c.nc)
	if err != nil && !errors.Is(err, io.EOF) {
		t.Logf("read: %v", err)
	}
	if strings.Contains(string(got), "*2\r\n") {
		t.Fatalf("EXEC was answered although its fsync failed: %q", got)
	}
}

// TestTxGoRedis: go-redis TxPipelined (MULTI … EXEC) applies its writes
// once and returns their replies; a run-time error is that command's
// error; a command refused while queuing runs nothing. Pipelined (no
// MULTI) is unchanged.
func TestTxGoRedis(t *testing.T) {
	ts, db, _ := startMemFS(t, 0)
	rc := ts.client(t)
	ctx := context.Background()
	cmds, err := rc.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "MEM.ADD", "k", "VALUES", 2, 1, 2, "ID", 10)
		p.Do(ctx, "MEM.ADD", "k", "VALUES", 2, 3, 4, "ID", 11)
		p.Do(ctx, "MEM.REWARD", "k", 1, 10)
		return nil
	})
	if err != nil || len(cmds) != 3 {
		t.Fatalf("TxPipelined: %v (%d replies)", err, len(cmds))
	}
	if id, err := cmds[1].(*redis.Cmd).Int64(); err != nil || id != 11 {
		t.Fatalf("second MEM.ADD: %d %v", id, err)
	}
	if n := count(t, db, "k"); n != 3 {
		t.Fatalf("after TxPipelined: %d memories, want 3", n)
	}

	_, err = rc.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "MEM.ADD", "nosuch", "VALUES", 2, 1, 2)
		p.Do(ctx, "MEM.ADD", "k", "VALUES", 2, 5, 6, "ID", 12)
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "nosuch") {
		t.Fatalf("TxPipelined with an unknown collection: %v", err)
	}
	if n := count(t, db, "k"); n != 4 {
		t.Fatalf("the command after a run-time error did not run: %d memories, want 4", n)
	}

	_, err = rc.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "MEM.ADD", "k", "VALUES", 2, 5, 6, "ID", 13)
		p.Do(ctx, "MEM.GET")
		return nil
	})
	if err == nil {
		t.Fatal("TxPipelined with a command of too few arguments succeeded")
	}
	if n := count(t, db, "k"); n != 4 {
		t.Fatalf("an aborted transaction ran: %d memories, want 4", n)
	}

	cmds, err = rc.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "MEM.ADD", "k", "VALUES", 2, 7, 8, "ID", 14)
		p.Ping(ctx)
		return nil
	})
	if err != nil || len(cmds) != 2 {
		t.Fatalf("Pipelined: %v (%d replies)", err, len(cmds))
	}
	if n := count(t, db, "k"); n != 5 {
		t.Fatalf("after Pipelined: %d memories, want 5", n)
	}
	// go-redis Watch (optimistic locking) learns there is none.
	err = rc.Watch(ctx, func(*redis.Tx) error { return nil }, "k")
	if err == nil || !strings.Contains(err.Error(), "WATCH is not supported") {
		t.Fatalf("Watch: %v, want WATCH's error", err)
	}
	if err := rc.Ping(ctx).Err(); err != nil {
		t.Fatalf("the connection is unusable after the transactions: %v", err)
	}
}

// TestTxRedisPy: redis-py's default pipeline (transaction=True) sends
// MULTI … EXEC: its writes happen once and its replies are right; a
// command refused while queuing raises and runs nothing; a run-time error
// is that command's result; WATCH raises.
func TestTxRedisPy(t *testing.T) {
	py := "/usr/bin/python3" // Debian's Python, where python3-redis is installed
	if out, err := exec.Command(py, "-c", "import redis").CombinedOutput(); err != nil {
		t.Fatalf("redis-py is missing (scripts/test.sh installs python3-redis): %v\n%s", err, out)
	}
	ts, db, _ := startMemFS(t, 0)
	h, port := hostPort(t, ts.addr)
	script := `
import sys, redis
r = redis.Redis(host=sys.argv[1], port=int(sys.argv[2]))
p = r.pipeline()
p.execute_command("MEM.ADD", "k", "VALUES", 2, 1, 2, "ID", 20)
p.execute_command("MEM.ADD", "k", "VALUES", 2, 3, 4, "ID", 21)
p.execute_command("MEM.REWARD", "k", 1, 20)
res = p.execute()
print("ok", res[0], res[1], [round(float(q), 3) for q in res[2]])
p = r.pipeline()
p.execute_command("MEM.ADD", "k", "VALUES", 2, 5, 6, "ID", 22)
p.execute_command("MEM.GET")
try:
    p.execute()
    print("no error")
except redis.exceptions.ResponseError as e:
    print("aborted", "wrong number of arguments" in str(e))
p = r.pipeline()
p.execute_command("MEM.ADD", "nosuch", "VALUES", 2, 1, 2)
p.execute_command("MEM.ADD", "k", "VALUES", 2, 5, 6, "ID", 23)
res = p.execute(raise_on_error=False)
print("partial", type(res[0]).__name__, res[1])
try:
    with r.pipeline() as p:
        p.watch("k")
    print("watched")
except redis.exceptions.ResponseError as e:
    print("watch", "not supported" in str(e))
print(r.ping())
`
	out, err := exec.Command(py, "-c", script, h, port).CombinedOutput()
	want := "ok 20 21 [0.3]\naborted True\npartial ResponseError 23\nwatch True\nTrue"
	if err != nil || strings.TrimSpace(string(out)) != want {
		t.Fatalf("redis-py transactions: %v\n%s\nwant:\n%s", err, out, want)
	}
	if n := count(t, db, "k"); n != 4 { // 1, 20, 21, 23: each once
		t.Fatalf("after redis-py's transactions: %d memories, want 4", n)
	}
	c, _ := db.Collection("k")
	if m, err := c.Get(20); err != nil || m.Visits != 1 {
		t.Fatalf("memory 20 rewarded %d times (%v), want once", m.Visits, err)
	}
}

// TestTxNotHeldUpBySlowReader: a client that does not read a large reply
// blocks its own command in a socket write; that command lets go of the
// transaction lock while it waits, so another client's EXEC (and, behind
// it, everyone else) is not held up until the output timeout.
func TestTxNotHeldUpBySlowReader(t *testing.T) {
	ts, _, _ := startMemFS(t, 0)
	rc := ts.client(t)
	ctx := context.Background()
	payload := strings.Repeat("p", 1<<20)
	for i := 0; i < 24; i++ {
		if err := rc.Do(ctx, "MEM.ADD", "k", "VALUES", 2, 1, i, "PAYLOAD", payload).Err(); err != nil {
			t.Fatal(err)
		}
	}
	slow := newTxConn(t, ts) // asks for 24 MiB and reads none of it
	io.WriteString(slow.nc, "MEM.RETRIEVE k VALUES 2 1 1 K1 25 K2 25 WITHPAYLOAD\r\n")
	time.Sleep(200 * time.Millisecond) // until its write blocks on full socket buffers
	c := newTxConn(t, ts)
	c.nc.SetDeadline(time.Now().Add(5 * time.Second))
	begin := time.Now()
	c.do("MULTI\r\nMEM.ADD k VALUES 2 3 3 ID 1000\r\nEXEC\r\nPING\r\n", "+OK\r\n+QUEUED\r\n*1\r\n:1000\r\n+PONG\r\n")
	t.Logf("EXEC beside a client not reading 24 MiB: %v", time.Since(begin))
}

// TestTxNotHeldUpByFsync: a lone write waiting for its fsync lets go of
// the transaction lock, so another client's EXEC does not wait for that
// fsync.
func TestTxNotHeldUpByFsync(t *testing.T) {
	const delay = 500 * time.Millisecond
	ts, _, _ := startMemFS(t, delay)
	w := newTxConn(t, ts)
	io.WriteString(w.nc, rewardCmd(1)) // waits in its handler for a slow fsync
	time.Sleep(100 * time.Millisecond)
	c := newTxConn(t, ts)
	begin := time.Now()
	c.do("MULTI\r\nPING\r\nEXEC\r\n", "+OK\r\n+QUEUED\r\n*1\r\n+PONG\r\n")
	if took := time.Since(begin); took > delay/2 {
		t.Fatalf("EXEC took %v beside a write waiting for a %v fsync: it waited for the fsync", took, delay)
	}
	if r, err := readReply(w.br); err != nil {
		t.Fatalf("the write's reply: %v %v", r, err)
	}
}
