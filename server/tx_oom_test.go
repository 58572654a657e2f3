package server

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/wal"
)

// TestTxReplyHeldToMaxMemory: a transaction whose reply would pass
// --maxmemory has the commands whose replies do not fit answered -OOM as
// their elements; the others (the PING after them) still run and answer,
// and the budget never passes its limit.
func TestTxReplyHeldToMaxMemory(t *testing.T) {
	const limit = 8 << 20
	big := strings.Repeat("b", 1<<20)
	ts := startServer(t, Config{MaxMemory: limit}, func(s *Server) {
		s.Register("MEM.T_BIG", 1, func(c *Ctx, _ [][]byte) error {
			c.WriteBulkString(big)
			return nil
		}, ReadOnly)
	})
	c := newTxConn(t, ts)
	c.nc.SetDeadline(time.Now().Add(waitBound))
	const n = 20 // 20 MiB of replies
	io.WriteString(c.nc, "MULTI\r\n"+strings.Repeat("MEM.T_BIG a\r\n", n)+"PING\r\nEXEC\r\nPING\r\n")
	for range n + 2 {
		readReply(c.br) // +OK, +QUEUED ...
	}
	r, err := readReply(c.br)
	a, ok := r.([]any)
	if err != nil || !ok || len(a) != n+1 {
		t.Fatalf("EXEC: %d elements, %v", len(a), err)
	}
	var bulks, ooms int
	for _, e := range a[:n] {
		switch e := e.(type) {
		case string:
			if e != big {
				t.Fatalf("an element of %d bytes, want %d", len(e), len(big))
			}
			bulks++
		case *ReplyError:
			if !strings.HasPrefix(e.Msg, "OOM ") {
				t.Fatalf("element %v, want -OOM", e)
			}
			ooms++
		default:
			t.Fatalf("element %T", e)
		}
	}
	if a[n] != "PONG" || ooms == 0 || bulks == 0 {
		t.Fatalf("%d bulks, %d -OOM, last %v: want both and PONG", bulks, ooms, a[n])
	}
	if r, err := readReply(c.br); err != nil || r != "PONG" {
		t.Fatalf("PING after EXEC: %v %v", r, err)
	}
	if p := ts.budget.Peak(); p > limit {
		t.Fatalf("client memory peaked at %d, past the %d limit", p, limit)
	}
	// The connection's reader holds a little (its argument slices) until
	// it closes; then nothing may stay reserved.
	c.nc.Close()
	for deadline := time.Now().Add(waitBound); ts.budget.Used() != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes still reserved after EXEC and close", ts.budget.Used())
		}
	}
	t.Logf("%d replies of 1 MiB fit in %d MiB, %d refused; peak %d", bulks, limit>>20, ooms, ts.budget.Peak())
}

// TestTxMGetHeldToMaxMemory: the case with the real command: 8
// queued MEM.MGETs of large payloads, whose replies together are 4 times
// the budget, by a read-only user: refused element by element, the budget
// never passed.
func TestTxMGetHeldToMaxMemory(t *testing.T) {
	const limit = 16 << 20
	db, err := engine.Open(t.TempDir(), engine.Options{Sync: wal.SyncNone, CheckpointInterval: -1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ts := startServer(t, Config{MaxMemory: limit}, func(s *Server) { s.RegisterMem(db) })
	rdb := ts.client(t)
	mustDo(t, rdb, "MEM.CREATE", "c", "DIM", 2)
	payload := strings.Repeat("p", 2<<20)
	for i := 0; i < 4; i++ {
		mustDo(t, rdb, "MEM.ADD", "c", "VALUES", 2, 1, i, "PAYLOAD", payload)
	}
	ctx := context.Background()
	// Outside MULTI the same reads stream: each reply is sent as it is
	// written, holding one payload at a time, so all are answered and the
	// budget is never passed either.
	for i := 0; i < 8; i++ {
		v, err := rdb.Do(ctx, "MEM.MGET", "c", 1, 2, 3, 4).Slice()
		if err != nil || len(v) != 4 {
			t.Fatalf("MEM.MGET outside MULTI: %d %v", len(v), err)
		}
	}
	if p := ts.budget.Peak(); p > limit {
		t.Fatalf("client memory peaked at %d outside MULTI, past the %d limit", p, limit)
	}
	pipe := rdb.TxPipeline()
	cmds := make([]interface{ Err() error }, 8)
	for i := range cmds {
		cmds[i] = pipe.Do(ctx, "MEM.MGET", "c", 1, 2, 3, 4) // 8 MiB each
	}
	pipe.Exec(ctx)
	var ooms int
	for _, c := range cmds {
		if err := c.Err(); err != nil {
			if !strings.HasPrefix(err.Error(), "OOM") {
				t.Fatalf("MEM.MGET in EXEC: %v", err)
			}
			ooms++
		}
	}
	if ooms == 0 {
		t.Fatalf("64 MiB of replies under a %d MiB budget: none refused", limit>>20)
	}
	if p := ts.budget.Peak(); p > limit {
		t.Fatalf("client memory peaked at %d, past the %d limit", p, limit)
	}
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
}

// TestReplyBufUndo: what a refused command wrote is dropped, across chunk
// boundaries, and what the buffer holds is exactly what the budget has
// reserved for it.
func TestReplyBufUndo(t *testing.T) {
	b := Budget{limit: 1 << 20}
	r := &replyBuf{b: &b}
	content := func() string {
		var s strings.Builder
		for _, c := range r.chunks {
			s.Write(c)
		}
		return s.String()
	}
	check := func(want string) {
		t.Helper()
		if got := content(); got != want {
			t.Fatalf("holds %d bytes %.20q…, want %d %.20q…", len(got), got, len(want), want)
		}
		if int64(len(want)) != r.size || b.Used() != r.reserved || r.reserved < r.size {
			t.Fatalf("size %d reserved %d, budget used %d", r.size, r.reserved, b.Used())
		}
	}
	r.Write([]byte("first"))
	keep := "first"
	mark := r.size
	r.Write([]byte(strings.Repeat("x", replyChunk)))   // fills chunk 1, opens chunk 2
	r.Write([]byte(strings.Repeat("y", 3*replyChunk))) // a chunk of its own
	if _, err := r.Write(make([]byte, 1<<20)); err == nil || !r.refused {
		t.Fatalf("a write past the limit: %v, refused %v", err, r.refused)
	}
	if _, err := r.Write([]byte("z")); err == nil {
		t.Fatal("a write after a refusal was taken")
	}
	r.undo(mark)
	check(keep)
	r.forcing = true
	r.Write([]byte("-OOM\r\n"))
	r.forcing = false
	keep += "-OOM\r\n"
	r.Write([]byte("after"))
	keep += "after"
	check(keep)
	r.release()
	if b.Used() != 0 {
		t.Fatalf("%d bytes reserved after release", b.Used())
	}
}
