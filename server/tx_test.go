package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/memrl/memrl/engine"
)

// txConn is a raw connection for byte-exact transaction tests.
type txConn struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
}

func newTxConn(t *testing.T, ts *testServer) *txConn {
	nc := ts.rawConn(t)
	return &txConn{t: t, nc: nc, br: bufio.NewReader(nc)}
}

// do sends req (inline commands, one a line) and expects exactly want.
func (c *txConn) do(req, want string) {
	c.t.Helper()
	if _, err := io.WriteString(c.nc, req); err != nil {
		c.t.Fatal(err)
	}
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c.br, got); err != nil {
		c.t.Fatalf("sent %q: reading %d bytes: %v (got %q, want %q)", req, len(want), err, got, want)
	}
	if string(got) != want {
		c.t.Fatalf("sent %q:\n got %q\nwant %q", req, got, want)
	}
}

// count returns the live memories of collection name.
func count(t *testing.T, db *engine.DB, name string) int {
	t.Helper()
	c, err := db.Collection(name)
	if err != nil {
		t.Fatal(err)
	}
	in, err := c.Info()
	if err != nil {
		t.Fatal(err)
	}
	return in.Count
}

func TestTxQueuesAndRunsAtExec(t *testing.T) {
	ts, db, _ := startMemFS(t, 0)
	c := newTxConn(t, ts)
	c.do("MULTI\r\n", "+OK\r\n")
	c.do("MEM.ADD k VALUES 2 1 2 ID 7\r\nPING\r\nECHO hi\r\n", "+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n")
	if n := count(t, db, "k"); n != 1 {
		t.Fatalf("a queued MEM.ADD ran before EXEC: %d memories", n)
	}
	c.do("EXEC\r\n", "*3\r\n:7\r\n+PONG\r\n$2\r\nhi\r\n")
	if n := count(t, db, "k"); n != 2 {
		t.Fatalf("after EXEC: %d memories, want 2", n)
	}
	// The connection is out of the transaction: commands run at once.
	c.do("PING\r\n", "+PONG\r\n")
	c.do("MULTI\r\nEXEC\r\n", "+OK\r\n*0\r\n")
}

// TestTxRunTimeErrorsAreElements: a queued command that fails when it runs
// has its error as its element; the others run (no rollback, as Redis).
func TestTxRunTimeErrorsAreElements(t *testing.T) {
	ts, db, _ := startMemFS(t, 0)
	c := newTxConn(t, ts)
	c.do("MULTI\r\nMEM.ADD nosuch VALUES 2 1 2\r\nMEM.ADD k VALUES 3 1 2 3\r\nMEM.ADD k VALUES 2 1 2 ID 9\r\nEXEC\r\n",
		"+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n*3\r\n-ERR ")
	rest, err := c.br.ReadString('\n') // the unknown collection's error text
	if err != nil || !strings.Contains(rest, "nosuch") {
		t.Fatalf("first element: %q %v", rest, err)
	}
	if l, _ := c.br.ReadString('\n'); !strings.HasPrefix(l, "-ERR") {
		t.Fatalf("second element (wrong dimension): %q", l)
	}
	c.do("", ":9\r\n")
	if n := count(t, db, "k"); n != 2 {
		t.Fatalf("%d memories, want 2 (id 1 and 9)", n)
	}
}

// TestTxExecAbort: a command refused while queuing (unknown, too few
// arguments, not allowed) makes EXEC run nothing.
func TestTxExecAbort(t *testing.T) {
	ts, db, _ := startMemFS(t, 0)
	c := newTxConn(t, ts)
	for _, bad := range []struct{ cmd, reply string }{
		{"NOSUCH a b", "-ERR unknown command 'NOSUCH', with args beginning with: 'a' 'b' \r\n"},
		{"MEM.GET", "-ERR wrong number of arguments for 'mem.get' command\r\n"},
		{"WATCH", "-ERR wrong number of arguments for 'watch' command\r\n"},
		{"DISCARD x", "-ERR wrong number of arguments for 'discard' command\r\n"},
	} {
		c.do("MULTI\r\nMEM.ADD k VALUES 2 1 2\r\n"+bad.cmd+"\r\nMEM.ADD k VALUES 2 3 4\r\nEXEC\r\n",
			"+OK\r\n+QUEUED\r\n"+bad.reply+"+QUEUED\r\n-EXECABORT Transaction discarded because of previous errors.\r\n")
		if n := count(t, db, "k"); n != 1 {
			t.Fatalf("after %q and EXECABORT: %d memories, want 1", bad.cmd, n)
		}
		c.do("EXEC\r\n", "-ERR EXEC without MULTI\r\n") // the transaction is gone
	}
	// EXEC with arguments is refused and discards the transaction.
	c.do("MULTI\r\nMEM.ADD k VALUES 2 1 2\r\nEXEC now\r\nEXEC\r\n", "+OK\r\n+QUEUED\r\n"+
		"-EXECABORT Transaction discarded because of: ERR wrong number of arguments for 'exec' command\r\n"+
		"-ERR EXEC without MULTI\r\n")
	if n := count(t, db, "k"); n != 1 {
		t.Fatalf("after EXEC with arguments: %d memories, want 1", n)
	}
}

// TestTxMisuse: EXEC or DISCARD without MULTI, a nested MULTI, WATCH:
// clear errors that change nothing.
func TestTxMisuse(t *testing.T) {
	ts, db, _ := startMemFS(t, 0)
	c := newTxConn(t, ts)
	c.do("EXEC\r\n", "-ERR EXEC without MULTI\r\n")
	c.do("DISCARD\r\n", "-ERR DISCARD without MULTI\r\n")
	c.do("WATCH k\r\n", "-ERR WATCH is not supported: memrl has no keys to watch; "+
		"MULTI/EXEC run atomically without it (see docs/PROTOCOL.md, Transactions)\r\n")
	c.do("UNWATCH\r\n", "+OK\r\n")
	// A nested MULTI and a WATCH inside MULTI change nothing: the
	// transaction goes on and runs.
	c.do("MULTI\r\nMEM.ADD k VALUES 2 1 2 ID 5\r\nMULTI\r\nWATCH k\r\nUNWATCH\r\nEXEC\r\n",
		"+OK\r\n+QUEUED\r\n-ERR MULTI calls can not be nested\r\n-ERR WATCH inside MULTI is not allowed\r\n+QUEUED\r\n*2\r\n:5\r\n+OK\r\n")
	if n := count(t, db, "k"); n != 2 {
		t.Fatalf("%d memories, want 2", n)
	}
}

func TestTxDiscard(t *testing.T) {
	ts, db, _ := startMemFS(t, 0)
	c := newTxConn(t, ts)
	c.do("MULTI\r\nMEM.ADD k VALUES 2 1 2\r\nMEM.DEL k 1\r\nDISCARD\r\n", "+OK\r\n+QUEUED\r\n+QUEUED\r\n+OK\r\n")
	c.do("EXEC\r\n", "-ERR EXEC without MULTI\r\n")
	if n := count(t, db, "k"); n != 1 {
		t.Fatalf("after DISCARD: %d memories, want 1", n)
	}
	waitBudget(t, ts, "after DISCARD")
}

// waitNoClients waits until the server has forgotten every connection.
func waitNoClients(t *testing.T, ts *testServer) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for ts.clientCount() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the server still holds a connection")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestTxClosedMidMultiRunsNothing: a connection that ends (closed by the
// client, QUIT) before EXEC runs none of its queued commands and gives
// back their memory.
func TestTxClosedMidMultiRunsNothing(t *testing.T) {
	ts, db, _ := startMemFS(t, 0)
	c := newTxConn(t, ts)
	c.do("MULTI\r\nMEM.ADD k VALUES 2 1 2\r\nMEM.DEL k 1\r\n", "+OK\r\n+QUEUED\r\n+QUEUED\r\n")
	if ts.budget.Used() == 0 {
		t.Fatal("queued commands hold nothing of the client-memory budget")
	}
	c.nc.Close()
	waitNoClients(t, ts)
	if n := count(t, db, "k"); n != 1 {
		t.Fatalf("after a close mid-MULTI: %d memories, want 1", n)
	}
	if u := ts.budget.Used(); u != 0 {
		t.Fatalf("after a close mid-MULTI the budget holds %d bytes", u)
	}

	c = newTxConn(t, ts)
	io.WriteString(c.nc, "MULTI\r\nMEM.DEL k 1\r\nQUIT\r\nEXEC\r\n")
	if got := readUntilEOF(t, c.nc); got != "+OK\r\n+QUEUED\r\n+OK\r\n" {
		t.Fatalf("QUIT inside MULTI: %q", got)
	}
	waitNoClients(t, ts)
	if n := count(t, db, "k"); n != 1 {
		t.Fatalf("after QUIT mid-MULTI: %d memories, want 1", n)
	}
}

// TestTxReset: RESET discards the transaction, clears the name and, on a
// server with users, requires AUTH again.
func TestTxReset(t *testing.T) {
	ts := startServer(t, Config{Users: []User{{Name: DefaultUser, Password: "pw"}}}, nil)
	c := newTxConn(t, ts)
	c.do("AUTH pw\r\nCLIENT SETNAME n1\r\nMULTI\r\nPING\r\nRESET\r\nEXEC\r\n",
		"+OK\r\n+OK\r\n+OK\r\n+QUEUED\r\n+RESET\r\n-NOAUTH Authentication required.\r\n")
	c.do("AUTH pw\r\nCLIENT GETNAME\r\nEXEC\r\n", "+OK\r\n$-1\r\n-ERR EXEC without MULTI\r\n")
	c.do("RESET x\r\n", "-ERR wrong number of arguments for 'reset' command\r\n")
}

// TestTxAuthInsideMulti: AUTH inside MULTI is queued and runs at EXEC, as
// in Redis; commands after it are checked again against the new user.
func TestTxAuthInsideMulti(t *testing.T) {
	ts := startServer(t, Config{Users: []User{{Name: DefaultUser, Password: "pw"}, {Name: "ro", Password: "pr", ReadOnly: true}}},
		func(s *Server) { s.Register("WRITE", 0, func(c *Ctx, _ [][]byte) error { c.WriteOK(); return nil }) })
	c := newTxConn(t, ts)
	c.do("AUTH pw\r\nMULTI\r\nAUTH ro pr\r\nWRITE\r\nPING\r\nHELLO 2\r\nEXEC\r\n", "+OK\r\n+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n"+
		"*4\r\n+OK\r\n-NOPERM User ro has no permissions to run the 'write' command\r\n+PONG\r\n*14\r\n")
	// A read-only user may run a transaction of reads, not queue a write.
	c = newTxConn(t, ts)
	c.do("AUTH ro pr\r\nMULTI\r\nPING\r\nEXEC\r\n", "+OK\r\n+OK\r\n+QUEUED\r\n*1\r\n+PONG\r\n")
	c.do("MULTI\r\nWRITE\r\nEXEC\r\n", "+OK\r\n-NOPERM User ro has no permissions to run the 'write' command\r\n"+
		"-EXECABORT Transaction discarded because of previous errors.\r\n")
}

// TestTxBounds: the cap on queued commands, and the client-memory budget.
func TestTxBounds(t *testing.T) {
	ts := startServer(t, Config{MaxQueuedCommands: 2}, nil)
	c := newTxConn(t, ts)
	c.do("CONFIG GET max-queued-commands\r\n", "*2\r\n$19\r\nmax-queued-commands\r\n$1\r\n2\r\n")
	c.do("MULTI\r\nPING\r\nPING\r\nPING\r\nEXEC\r\n", "+OK\r\n+QUEUED\r\n+QUEUED\r\n"+
		"-ERR the transaction already holds 2 queued commands, the most allowed (max-queued-commands); EXEC will discard it\r\n"+
		"-EXECABORT Transaction discarded because of previous errors.\r\n")

	// 100 KB arguments (larger than a Reader keeps between commands, so
	// what the budget holds is the queue's): a few fit 1 MiB, not 20.
	ts = startServer(t, Config{MaxMemory: 1 << 20}, nil)
	c = newTxConn(t, ts)
	big := strings.Repeat("x", 100_000)
	echo := "*2\r\n$4\r\nECHO\r\n$100000\r\n" + big + "\r\n"
	c.do("MULTI\r\n", "+OK\r\n")
	queued := 0
	for ; queued < 20; queued++ {
		io.WriteString(c.nc, echo)
		l, err := c.br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if l == "-OOM command not allowed: client buffers would exceed 'maxmemory'\r\n" {
			break
		}
		if l != "+QUEUED\r\n" {
			t.Fatalf("queuing 100 KB: %q", l)
		}
		if u := ts.budget.Used(); u < int64(queued+1)*100_000 {
			t.Fatalf("%d queued commands of 100 KB hold %d bytes of the budget", queued+1, u)
		}
	}
	if queued < 5 || queued == 20 {
		t.Fatalf("%d commands of 100 KB queued within a 1 MiB budget", queued)
	}
	c.do("EXEC\r\n", "-EXECABORT Transaction discarded because of previous errors.\r\n")
	waitBudget(t, ts, "after EXECABORT")
	c.do("MULTI\r\n"+echo+"EXEC\r\n", "+OK\r\n+QUEUED\r\n*1\r\n$100000\r\n"+big+"\r\n")
	waitBudget(t, ts, "after EXEC")
}

// waitBudget waits until the client-memory budget holds no more than what
// a Reader keeps between commands: the server gives back a reply's bytes
// just after the client may have read them.
func waitBudget(t *testing.T, ts *testServer, when string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for ts.budget.Used() > 4096 {
		if time.Now().After(deadline) {
			t.Fatalf("%s the budget holds %d bytes", when, ts.budget.Used())
		}
		time.Sleep(time.Millisecond)
	}
}

// TestTxObservability: queued commands are counted and logged when EXEC
// runs them, not when queued; EXEC itself is counted but not slow-logged.
func TestTxObservability(t *testing.T) {
	ts := startServer(t, Config{}, nil)
	ts.SetSlowlog(0, 128) // log every command
	c := newTxConn(t, ts)
	c.do("MULTI\r\nECHO a\r\nNOSUCH\r\n", "+OK\r\n+QUEUED\r\n-ERR unknown command 'NOSUCH', with args beginning with: \r\n")
	c.do("DISCARD\r\n", "+OK\r\n")
	c.do("MULTI\r\nECHO a\r\nECHO b\r\nEXEC\r\n", "+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n")
	info := ts.infoText([]string{"commandstats"})
	for _, want := range []string{"cmdstat_echo:calls=2,", "cmdstat_multi:calls=2,", "cmdstat_exec:calls=1,", "cmdstat_discard:calls=1,"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO commandstats lacks %q:\n%s", want, info)
		}
	}
	if u := ts.obs.unknown.Load(); u != 1 {
		t.Errorf("unknown commands: %d, want 1", u)
	}
	var names []string
	ts.obs.slow.mu.Lock()
	for _, e := range ts.obs.slow.ring {
		names = append(names, strings.ToLower(e.args[0]))
	}
	ts.obs.slow.mu.Unlock()
	got := strings.Join(names, " ")
	if got != "multi discard multi echo echo" {
		t.Errorf("SLOWLOG holds %q, want the queued ECHOs when EXEC ran them and no EXEC", got)
	}
}

// readReply reads one RESP reply: a string, an int64, an error (as a
// *ReplyError), nil, or a []any.
func readReply(br *bufio.Reader) (any, error) {
	l, err := br.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if len(l) < 3 {
		return nil, fmt.Errorf("short line %q", l)
	}
	body := l[1 : len(l)-2]
	switch l[0] {
	case '+':
		return body, nil
	case '-':
		return &ReplyError{Msg: body}, nil
	case ':':
		var n int64
		_, err := fmt.Sscan(body, &n)
		return n, err
	case '$':
		var n int
		if _, err := fmt.Sscan(body, &n); err != nil || n < 0 {
			return nil, err
		}
		b := make([]byte, n+2)
		_, err := io.ReadFull(br, b)
		return string(b[:n]), err
	case '*':
		var n int
		if _, err := fmt.Sscan(body, &n); err != nil || n < 0 {
			return nil, err
		}
		a := make([]any, n)
		for i := range a {
			if a[i], err = readReply(br); err != nil {
				return nil, err
			}
		}
		return a, nil
	}
	return nil, fmt.Errorf("bad reply line %q", l)
}

// TestTxNoInterleaving: transactions of 50 adds to each of two
// collections run while another client adds to the first collection
// outside any transaction and a third reads the second's count. The
// reader must only ever see whole transactions, and each transaction's
// adds to the first collection must get consecutive ids: no other
// client's add landed in the middle.
func TestTxNoInterleaving(t *testing.T) {
	ts, db, _ := startMemFS(t, 0)
	for _, name := range []string{"t", "r"} {
		if err := db.Create(name, engine.NewConfig(2)); err != nil {
			t.Fatal(err)
		}
	}
	const perColl, txs = 50, 30
	stop := make(chan struct{})
	errc := make(chan error, 2)
	hammer := func(req string, check func(any) error) {
		nc, err := net.Dial("tcp", ts.addr)
		if err != nil {
			errc <- err
			return
		}
		defer nc.Close()
		br := bufio.NewReader(nc)
		for {
			select {
			case <-stop:
				errc <- nil
				return
			default:
			}
			io.WriteString(nc, req)
			r, err := readReply(br)
			if err == nil {
				err = check(r)
			}
			if err != nil {
				errc <- err
				return
			}
		}
	}
	reads, adds := 0, 0
	go hammer("MEM.INFO r\r\n", func(r any) error {
		reads++
		a, ok := r.([]any)
		if !ok || len(a) < 20 || len(a)%2 != 0 || a[6] != "count" { // later fields (issue 10's, …) follow
			return fmt.Errorf("MEM.INFO: %v", r)
		}
		if n := a[7].(int64); n%perColl != 0 {
			return fmt.Errorf("read %d saw %d memories: part of a transaction", reads, n)
		}
		return nil
	})
	go hammer("MEM.ADD t VALUES 2 9 9\r\n", func(r any) error {
		adds++
		if _, ok := r.(int64); !ok {
			return fmt.Errorf("MEM.ADD outside the transaction: %v", r)
		}
		return nil
	})
	var tx strings.Builder
	tx.WriteString("MULTI\r\n")
	for i := 0; i < perColl; i++ {
		fmt.Fprintf(&tx, "MEM.ADD t VALUES 2 %d 1\r\nMEM.ADD r VALUES 2 %d 1\r\n", i, i)
	}
	tx.WriteString("EXEC\r\n")
	c := newTxConn(t, ts)
	for i := 0; i < txs; i++ {
		if _, err := io.WriteString(c.nc, tx.String()); err != nil {
			t.Fatal(err)
		}
		for j := 0; j < 2*perColl+1; j++ { // +OK, then +QUEUED each
			if _, err := readReply(c.br); err != nil {
				t.Fatal(err)
			}
		}
		r, err := readReply(c.br)
		if err != nil {
			t.Fatal(err)
		}
		a, ok := r.([]any)
		if !ok || len(a) != 2*perColl {
			t.Fatalf("EXEC: %v", r)
		}
		for j := 2; j < len(a); j += 2 {
			if a[j].(int64) != a[j-2].(int64)+1 {
				t.Fatalf("transaction %d: ids %v: another client's add landed inside it", i, a)
			}
		}
	}
	close(stop)
	for range 2 {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	if n := count(t, db, "r"); n != perColl*txs {
		t.Fatalf("%d memories, want %d", n, perColl*txs)
	}
	t.Logf("%d reads and %d adds outside transactions ran beside %d transactions", reads, adds, txs)
}

// TestTxPanicInsideExec: a queued command that panics ends the
// connection with an error instead of EXEC's array (the commands before
// it ran; the client must not take the reply for a whole transaction),
// and the transaction lock is given back: other clients go on.
func TestTxPanicInsideExec(t *testing.T) {
	ts := startServer(t, Config{}, func(s *Server) {
		s.Register("BOOM", 0, func(c *Ctx, _ [][]byte) error { panic("boom") })
	})
	c := newTxConn(t, ts)
	io.WriteString(c.nc, "MULTI\r\nPING\r\nBOOM\r\nPING\r\nEXEC\r\nPING\r\n")
	want := "+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n" +
		"-ERR internal error while executing a command inside EXEC; the commands before it ran; closing the connection\r\n"
	if got := readUntilEOF(t, c.nc); got != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	c = newTxConn(t, ts)
	c.nc.SetDeadline(time.Now().Add(5 * time.Second)) // a kept lock would hang the PING
	c.do("PING\r\n", "+PONG\r\n")
}
