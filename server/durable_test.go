package server

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/vfs"
	"github.com/memrl/memrl/wal"
)

// startMemFS serves a SyncAlways database on a MemFS whose fsyncs take
// syncDelay.
func startMemFS(t *testing.T, syncDelay time.Duration) (*testServer, *engine.DB, *vfs.MemFS) {
	t.Helper()
	fs := vfs.NewMemFS()
	db, err := engine.Open("/db", engine.Options{FS: fs, Sync: wal.SyncAlways,
		CheckpointInterval: -1, CheckpointBytes: -1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, Config{}, func(s *Server) { s.RegisterMem(db) })
	t.Cleanup(func() { db.Close() })
	if err := db.Create("k", engine.NewConfig(2)); err != nil {
		t.Fatal(err)
	}
	c, _ := db.Collection("k")
	if _, err := c.Add(engine.AddRequest{Vector: []float32{1, 2}, ID: 1, HasID: true}); err != nil {
		t.Fatal(err)
	}
	fs.SetSyncDelay(syncDelay)
	return ts, db, fs
}

func rewardCmd(id int) string {
	return fmt.Sprintf("*4\r\n$10\r\nMEM.REWARD\r\n$1\r\nk\r\n$1\r\n1\r\n$%d\r\n%d\r\n", len(fmt.Sprint(id)), id)
}

// TestPipelinedRepliesWaitForDurability sends pipelines of rewards and, the
// moment reply bytes arrive, crashes a copy of the disk (dropping unsynced
// data): every reward answered must be in it. fsyncs are slowed to 5 ms, so
// a reply sent before its fsync would be caught.
func TestPipelinedRepliesWaitForDurability(t *testing.T) {
	ts, db, fs := startMemFS(t, 5*time.Millisecond)
	nc := ts.rawConn(t)
	br := bufio.NewReader(nc)
	acked := 0
	for round := 0; round < 5; round++ {
		const n = 200
		var req strings.Builder
		for i := 0; i < n; i++ {
			req.WriteString(rewardCmd(1))
		}
		if _, err := io.WriteString(nc, req.String()); err != nil {
			t.Fatal(err)
		}
		for got := 0; got < n; {
			// Read one reply (*1 / $len / value), then crash a copy of the
			// disk with everything the server has said so far.
			for i := 0; i < 3; i++ {
				if _, err := br.ReadString('\n'); err != nil {
					t.Fatal(err)
				}
			}
			got++
			acked++
			if got%50 != 1 {
				continue
			}
			crashed := fs.Crash(vfs.DropUnsynced, rand.New(rand.NewSource(int64(acked))))
			db2, err := engine.Open("/db", engine.Options{FS: crashed, CheckpointInterval: -1, CheckpointBytes: -1, Logf: func(string, ...any) {}})
			if err != nil {
				t.Fatal(err)
			}
			c2, _ := db2.Collection("k")
			m, err := c2.Get(1)
			db2.Close()
			if err != nil || m.Visits < uint64(acked) {
				t.Fatalf("%d rewards answered, the disk holds %d (%v): a reply left before its fsync", acked, m.Visits, err)
			}
		}
	}
	c, _ := db.Collection("k")
	m, _ := c.Get(1)
	if m.Visits != uint64(acked) {
		t.Fatalf("visits %d, acked %d", m.Visits, acked)
	}
}

// TestFailedFsyncOverProtocol: a lone reward during a failed fsync gets an
// ERR reply; reads go on over the same connection; later writes get ERR;
// a pipeline of writes at the moment of failure gets its connection closed
// with no reply to any of them.
func TestFailedFsyncOverProtocol(t *testing.T) {
	ts, _, fs := startMemFS(t, 0)
	nc := ts.rawConn(t)
	br := bufio.NewReader(nc)
	line := func() string {
		s, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	fs.FailNextSync("wal")
	io.WriteString(nc, rewardCmd(1))
	if l := line(); !strings.HasPrefix(l, "-") || !strings.Contains(l, "fsync") {
		t.Fatalf("reward during a failed fsync: %q, want an fsync error", l)
	}
	io.WriteString(nc, "PING\r\n") // a read-only command on the same connection
	if l := line(); l != "+PONG\r\n" {
		t.Fatalf("PING after the failure: %q", l)
	}
	io.WriteString(nc, "MEM.INFO k\r\n")
	if l := line(); !strings.HasPrefix(l, "*") {
		t.Fatalf("MEM.INFO after the failure: %q", l)
	}
	nc2 := ts.rawConn(t) // a fresh connection sees the same
	br = bufio.NewReader(nc2)
	nc = nc2
	io.WriteString(nc, rewardCmd(1))
	if l := line(); !strings.HasPrefix(l, "-") {
		t.Fatalf("write after the failure: %q, want ERR", l)
	}
}

// TestFailedFsyncClosesPipeline: replies held for a pipeline are never sent
// if their fsync fails; the connection is closed instead.
func TestFailedFsyncClosesPipeline(t *testing.T) {
	ts, _, fs := startMemFS(t, time.Millisecond)
	nc := ts.rawConn(t)
	fs.FailNextSync("wal")
	var req strings.Builder
	for i := 0; i < 20; i++ {
		req.WriteString(rewardCmd(1))
	}
	req.WriteString("PING\r\n")
	io.WriteString(nc, req.String())
	got, err := io.ReadAll(nc)
	if err != nil && !errors.Is(err, io.EOF) {
		t.Logf("read: %v", err)
	}
	// Whatever was answered before the failing batch is fine; no reply may
	// follow an acknowledgement that was not durable. The pipeline's writes
	// were all in the failing batch or later, so nothing but errors may come.
	if strings.Contains(string(got), "*1\r\n") {
		t.Fatalf("a reward was answered although its fsync failed: %q", got)
	}
}

// TestPipelinedAddsAndDeletesWaitForDurability: the same check for MEM.ADD
// and MEM.DEL, which also reply through AfterDurable: a pipeline of adds,
// then one of deletes, crashing a copy of the disk as replies arrive.
func TestPipelinedAddsAndDeletesWaitForDurability(t *testing.T) {
	ts, _, fs := startMemFS(t, 5*time.Millisecond)
	nc := ts.rawConn(t)
	br := bufio.NewReader(nc)
	const n = 120
	// check crashes a copy of the disk and checks ids [100, 100+added) are
	// there except the first deleted even ones.
	check := func(added, deleted int) {
		crashed := fs.Crash(vfs.DropUnsynced, rand.New(rand.NewSource(int64(added+deleted))))
		db2, err := engine.Open("/db", engine.Options{FS: crashed, CheckpointInterval: -1, CheckpointBytes: -1, Logf: func(string, ...any) {}})
		if err != nil {
			t.Fatal(err)
		}
		defer db2.Close()
		c2, _ := db2.Collection("k")
		for j := 0; j < added; j++ {
			id := uint64(100 + j)
			_, err := c2.Get(id)
			gone := j%2 == 0 && j/2 < deleted
			inFlight := j%2 == 0 && deleted > 0 && !gone // a pipelined delete may be durable before its reply
			if !gone && !inFlight && err != nil {
				t.Fatalf("%d adds and %d deletes answered: add of %d missing: %v", added, deleted, id, err)
			}
			if gone && err == nil {
				t.Fatalf("%d adds and %d deletes answered: delete of %d undone", added, deleted, id)
			}
		}
	}
	var req strings.Builder
	for id := 100; id < 100+n; id++ {
		fmt.Fprintf(&req, "MEM.ADD k VALUES 2 1 %d ID %d\r\n", id, id)
	}
	io.WriteString(nc, req.String())
	for i := 1; i <= n; i++ {
		if line, err := br.ReadString('\n'); err != nil || line[0] != ':' {
			t.Fatalf("add reply %d: %q %v", i, line, err)
		}
		if i%20 == 1 || i == n {
			check(i, 0)
		}
	}
	req.Reset()
	for id := 100; id < 100+n; id += 2 {
		fmt.Fprintf(&req, "MEM.DEL k %d\r\n", id)
	}
	io.WriteString(nc, req.String())
	for i := 1; i <= n/2; i++ {
		if line, err := br.ReadString('\n'); err != nil || line != ":1\r\n" {
			t.Fatalf("delete reply %d: %q %v", i, line, err)
		}
		if i%10 == 1 || i == n/2 {
			check(n, i)
		}
	}
}
