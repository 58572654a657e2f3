package server

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/wal"
)

// TestMaxMemoryAcrossConnections is the hostile run's fifth finding: 40
// connections each declaring a 60 MB bulk and sending 50 MB took the
// server to 3.56 GB. Their sum is now bounded by MaxMemory: the request
// that would pass it gets -OOM and its connection is closed, the others
// and every other client go on, and the bytes come back when they leave.
func TestMaxMemoryAcrossConnections(t *testing.T) {
	const limit = 8 << 20
	ts := startServer(t, Config{MaxMemory: limit}, nil)
	chunk := strings.Repeat("x", 1<<20)
	var conns []*rawSession
	for range 6 { // 6 × 3 MiB of one unfinished 60 MB bulk each
		s := newRawSession(t, ts)
		conns = append(conns, s)
		if _, err := s.c.Write([]byte("*2\r\n$4\r\nECHO\r\n$60000000\r\n")); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if _, err := s.c.Write([]byte(chunk)); err != nil {
				break // closed: over the budget
			}
		}
	}
	// Which connections were refused is read from the connections
	// themselves, not from the order of refusals: the server reserves
	// ahead of the bytes it has read, so it may refuse an earlier
	// connection while a later one is being written (a 50 ms wait, then a
	// wait on the budget's counters, both mis-attributed refusals under
	// CI load). Every refusal must close exactly one connection with -OOM.
	closed := make([]bool, len(conns))
	refused := 0
	for deadline := time.Now().Add(10 * time.Second); ; {
		for i, s := range conns {
			if closed[i] {
				continue
			}
			if got, ok := readIfClosed(t, s.c, 20*time.Millisecond); ok {
				if !strings.HasPrefix(got, "-OOM ") {
					t.Fatalf("connection %d: got %q, want -OOM", i, got)
				}
				closed[i] = true
				refused++
			}
		}
		if n := ts.budget.Refused(); n > 0 && int64(refused) == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections closed with -OOM; the budget refused %d requests", refused, ts.budget.Refused())
		}
	}
	if refused == 0 {
		t.Fatal("no request was refused")
	}
	if used := ts.budget.Used(); used > limit {
		t.Fatalf("budget used %d > limit %d", used, limit)
	}
	if peak := ts.budget.Peak(); peak > limit {
		t.Fatalf("budget peak %d > limit %d", peak, limit)
	}
	honest := newRawSession(t, ts)
	if got := honest.do("PING"); got != "+PONG" {
		t.Fatalf("honest client: %q", got)
	}
	for _, s := range append(conns, honest) {
		s.c.Close()
	}
	waitClients(t, ts, 0)
	if used := ts.budget.Used(); used != 0 {
		t.Fatalf("%d bytes still reserved after the clients left", used)
	}
}

// TestMaxMemoryOneLargeRequest: one request alone larger than MaxMemory is
// refused, and a request within it still works.
func TestMaxMemoryOneLargeRequest(t *testing.T) {
	ts := startServer(t, Config{MaxMemory: 4 << 20}, nil)
	s := newRawSession(t, ts)
	ok := strings.Repeat("y", 2<<20)
	if got := s.do("ECHO", ok); got != "$"+itoa(len(ok)) {
		t.Fatalf("2 MiB ECHO: %q", got)
	}
	s.br.Discard(len(ok) + 2)
	big := strings.Repeat("z", 5<<20)
	go s.c.Write([]byte("*2\r\n$4\r\nECHO\r\n$" + itoa(len(big)) + "\r\n" + big + "\r\n")) // fails once the server closes
	if got := readUntilClosed(t, s.c); !strings.HasPrefix(got, "-OOM") {
		t.Fatalf("5 MiB ECHO with a 4 MiB budget: %q", got)
	}
}

func TestBudgetReturnsMemory(t *testing.T) {
	b := Budget{limit: 1 << 30}
	// Small releases add up to nothing worth a forced collection ...
	b.Reserve(100 << 20)
	b.Release(100 << 20)
	if b.returns.Load() != 0 {
		t.Fatal("100 MiB released of a 1 GiB budget forced a return")
	}
	// ... a quarter of the budget does.
	if !b.Reserve(200 << 20) {
		t.Fatal("Reserve refused")
	}
	b.Release(200 << 20)
	if b.returns.Load() != 1 {
		t.Fatal("releasing 300 MiB in all did not return memory to the OS")
	}
	// A second burst right after: returned once returnEvery has passed,
	// not dropped because the first return was too recent.
	b.Reserve(300 << 20)
	b.Release(300 << 20)
	if b.returns.Load() != 1 {
		t.Fatal("returned twice within returnEvery")
	}
	deadline := time.Now().Add(returnEvery + 5*time.Second)
	for b.returns.Load() != 2 {
		if time.Now().After(deadline) {
			t.Fatal("the second burst's memory was never returned")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if b.Reserve(2<<30) || b.Refused() != 1 {
		t.Fatal("a reservation over the limit was granted")
	}
	unlimited := Budget{}
	if !unlimited.Reserve(1 << 40) {
		t.Fatal("an unlimited budget refused")
	}
}

// TestRetrievePayloadsBounded is the hostile run's sixth finding:
// MEM.RETRIEVE ... WITHPAYLOAD held every payload of the reply at once.
// Payloads are now read one at a time (only the largest is reserved), and
// a reply over MaxReplyBytes is refused before anything is written.
func TestRetrievePayloadsBounded(t *testing.T) {
	db, err := engine.Open(t.TempDir(), engine.Options{Sync: wal.SyncNone, CheckpointInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ts := startServer(t, Config{MaxMemory: 3 << 20, MaxReplyBytes: 12 << 20}, func(s *Server) { s.RegisterMem(db) })
	rdb := ts.client(t)
	ctx := context.Background()
	mustDo(t, rdb, "MEM.CREATE", "p", "DIM", 2, "METRIC", "L2")
	payload := strings.Repeat("p", 1<<20)
	for i := range 20 {
		mustDo(t, rdb, "MEM.ADD", "p", "VALUES", 2, i, 0, "PAYLOAD", payload)
	}
	// 10 × 1 MiB: 10 MiB of reply with a 3 MiB budget.
	rows, err := rdb.Do(ctx, "MEM.RETRIEVE", "p", "VALUES", 2, 0, 0, "K1", 10, "K2", 10, "WITHPAYLOAD").Slice()
	if err != nil {
		t.Fatalf("10 payloads of 1 MiB: %v", err)
	}
	if len(rows) != 10 || rows[9].([]any)[4].(string) != payload {
		t.Fatalf("got %d rows", len(rows))
	}
	// 20 × 1 MiB is over MaxReplyBytes.
	wantErr(t, rdb, "more than the limit", "MEM.RETRIEVE", "p", "VALUES", 2, 0, 0, "K1", 20, "K2", 20, "WITHPAYLOAD")
	// Without payloads the same retrieval is small.
	if rows, err := rdb.Do(ctx, "MEM.RETRIEVE", "p", "VALUES", 2, 0, 0, "K1", 20, "K2", 20).Slice(); err != nil || len(rows) != 20 {
		t.Fatalf("without payloads: %d rows, %v", len(rows), err)
	}
	rdb.Close()
	waitClients(t, ts, 0)
	if used := ts.budget.Used(); used != 0 {
		t.Fatalf("%d bytes still reserved", used)
	}
}

// readIfClosed reports whether the server has closed c, with what it sent
// first: ok is false when nothing arrived within wait (the connection is
// open and idle); once something arrives it reads on until the close, as
// readUntilClosed does.
func readIfClosed(t *testing.T, c net.Conn, wait time.Duration) (string, bool) {
	t.Helper()
	buf := make([]byte, 4096)
	c.SetReadDeadline(time.Now().Add(wait))
	n, err := c.Read(buf)
	if err != nil && n == 0 {
		if isTimeout(err) {
			return "", false
		}
		return "", true
	}
	if err != nil {
		return string(buf[:n]), true
	}
	return string(buf[:n]) + readUntilClosed(t, c), true
}

// readUntilClosed returns what the server sent before it closed c; a
// reset (the server closed with our input unread) counts as closed.
func readUntilClosed(t *testing.T, c net.Conn) string {
	t.Helper()
	var got []byte
	buf := make([]byte, 4096)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			if isTimeout(err) {
				t.Fatalf("not closed by the server (got %q)", got)
			}
			return string(got)
		}
	}
}

// TestMaxMemoryCountsArguments: a million empty arguments are 6 MB on the
// wire but 40 MB of argument bounds; they count against MaxMemory.
func TestMaxMemoryCountsArguments(t *testing.T) {
	ts := startServer(t, Config{MaxMemory: 8 << 20}, nil)
	s := newRawSession(t, ts)
	go func() {
		s.c.Write([]byte("*1000000\r\n$4\r\nECHO\r\n"))
		s.c.Write([]byte(strings.Repeat("$0\r\n\r\n", 999999)))
	}()
	if got := readUntilClosed(t, s.c); !strings.HasPrefix(got, "-OOM") {
		t.Fatalf("a million arguments with an 8 MiB budget: %q", got)
	}
	if peak := ts.budget.Peak(); peak > 8<<20 {
		t.Fatalf("peak %d over the budget", peak)
	}
}
