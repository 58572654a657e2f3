package server

import (
	"context"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// waitBound is how long a test waits for something that must happen
// promptly: generous, so that a loaded machine does not fail it, and far
// below what the old behaviour (waiting for a release that never comes
// before the deadline) takes.
const waitBound = 5 * time.Second

// gate is a handler that signals when it starts and blocks until released
// or until its command's context ends; it records how it ended.
type gate struct {
	started  chan string   // the handler's first argument, when it starts
	release  chan struct{} // closed by the test (or its cleanup)
	ended    chan error    // the context's error, or nil if released
	once     sync.Once
	mu       sync.Mutex // guards order
	order    []string
	notBusy  bool // the handler ignores its context
	replyLen int  // bytes of the bulk reply, if any
}

func newGate(t *testing.T) *gate {
	g := &gate{started: make(chan string, 16), release: make(chan struct{}), ended: make(chan error, 16)}
	t.Cleanup(g.open) // before the server's cleanup: Shutdown waits for it
	return g
}

func (g *gate) open() { g.once.Do(func() { close(g.release) }) }

func (g *gate) log(s string) {
	g.mu.Lock()
	g.order = append(g.order, s)
	g.mu.Unlock()
}

// handler blocks: registered as the slow command.
func (g *gate) handler(c *Ctx, args [][]byte) error {
	g.started <- string(args[0])
	var err error
	if g.notBusy {
		<-g.release
	} else {
		select {
		case <-g.release:
		case <-c.Context().Done():
			err = c.Context().Err()
		}
	}
	g.ended <- err
	g.log("slow " + string(args[0]) + " ended")
	if err != nil {
		return err
	}
	c.WriteOK()
	return nil
}

// quick answers at once and records that it ran.
func (g *gate) quick(c *Ctx, args [][]byte) error {
	g.log("quick " + string(args[0]))
	c.WriteOK()
	return nil
}

func (g *gate) register(s *Server) {
	s.Register("MEM.T_SLOWREAD", 1, g.handler, ReadOnly)
	s.Register("MEM.T_SLOWWRITE", 1, g.handler)
	s.Register("MEM.T_READ", 1, g.quick, ReadOnly)
	s.Register("MEM.T_WRITE", 1, g.quick)
}

// waitStarted waits for the slow handler to start.
func (g *gate) waitStarted(t *testing.T) {
	t.Helper()
	select {
	case <-g.started:
	case <-time.After(waitBound):
		t.Fatal("the slow command did not start")
	}
}

// answersWithin sends req on a new connection and fails the test unless
// want arrives within waitBound.
func answersWithin(t *testing.T, ts *testServer, req, want string) time.Duration {
	t.Helper()
	nc := ts.rawConn(t)
	begin := time.Now()
	done := make(chan string, 1)
	go func() {
		io.WriteString(nc, req)
		b := make([]byte, len(want))
		n, _ := io.ReadFull(nc, b)
		done <- string(b[:n])
	}()
	select {
	case got := <-done:
		if got != want {
			t.Fatalf("sent %q: got %q, want %q", req, got, want)
		}
	case <-time.After(waitBound):
		t.Fatalf("sent %q: no answer within %v while a transaction runs", req, waitBound)
	}
	return time.Since(begin)
}

// TestTxOfReadsDoesNotStopTheWorld: while a transaction of slow reads
// runs, PING, a read and a write of the same collection from other
// clients answer at once: a transaction of reads excludes no one.
func TestTxOfReadsDoesNotStopTheWorld(t *testing.T) {
	g := newGate(t)
	ts := startServer(t, Config{BusyTimeout: -1}, g.register)
	tx := newTxConn(t, ts)
	io.WriteString(tx.nc, "MULTI\r\nMEM.T_SLOWREAD a\r\nMEM.T_SLOWREAD b\r\nEXEC\r\n")
	g.waitStarted(t)
	took := answersWithin(t, ts, "PING\r\n", "+PONG\r\n")
	answersWithin(t, ts, "MEM.T_READ a\r\n", "+OK\r\n")
	answersWithin(t, ts, "MEM.T_WRITE a\r\n", "+OK\r\n")
	t.Logf("PING beside a transaction of reads: %v", took)
	g.open()
	if r, err := readReply(tx.br); err != nil || r != "OK" {
		t.Fatalf("MULTI: %v %v", r, err)
	}
	for range 2 {
		readReply(tx.br)
	}
	r, err := readReply(tx.br)
	if a, ok := r.([]any); err != nil || !ok || len(a) != 2 || a[0] != "OK" || a[1] != "OK" {
		t.Fatalf("EXEC: %v %v", r, err)
	}
}

// TestTxOfWritesLocksOnlyItsCollections: a transaction that writes
// collection a holds a alone: a write to b and PING answer at once, while
// a write to a waits for the transaction to end.
func TestTxOfWritesLocksOnlyItsCollections(t *testing.T) {
	g := newGate(t)
	ts := startServer(t, Config{BusyTimeout: -1}, g.register)
	tx := newTxConn(t, ts)
	io.WriteString(tx.nc, "MULTI\r\nMEM.T_WRITE a\r\nMEM.T_SLOWWRITE a\r\nEXEC\r\n")
	g.waitStarted(t)
	answersWithin(t, ts, "MEM.T_WRITE b\r\n", "+OK\r\n")
	answersWithin(t, ts, "PING\r\n", "+PONG\r\n")
	same := newTxConn(t, ts)
	same.do("CLIENT SETNAME waiter\r\n", "+OK\r\n")
	io.WriteString(same.nc, "MEM.T_WRITE a\r\n")
	// Wait until that write has arrived (CLIENT LIST names it as the
	// connection's command): it must then wait for the transaction.
	rdb := ts.client(t)
	for deadline := time.Now().Add(waitBound); ; time.Sleep(time.Millisecond) {
		list, err := rdb.ClientList(context.Background()).Result()
		if err != nil {
			t.Fatal(err)
		}
		var line string
		for _, l := range strings.Split(list, "\n") {
			if strings.Contains(l, " name=waiter ") {
				line = l
			}
		}
		if strings.Contains(line, " cmd=mem.t_write") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the write of a never arrived: %s", list)
		}
	}
	g.open()
	same.nc.SetDeadline(time.Now().Add(waitBound))
	if r, err := readReply(same.br); err != nil || r != "OK" {
		t.Fatalf("write of a: %v %v", r, err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	want := "quick a,quick b,slow a ended,quick a"
	if got := strings.Join(g.order, ","); got != want {
		t.Fatalf("order %s, want %s: a write to a ran inside the transaction", got, want)
	}
}

// TestBusyTimeoutEndsACommand: a command that honours its context and runs
// past busy-timeout ends with -TIMEOUT, alone or inside EXEC (where the
// budget is the EXEC's); the connection goes on.
func TestBusyTimeoutEndsACommand(t *testing.T) {
	g := newGate(t)
	ts := startServer(t, Config{BusyTimeout: 100 * time.Millisecond}, g.register)
	c := newTxConn(t, ts)
	c.nc.SetDeadline(time.Now().Add(waitBound))
	io.WriteString(c.nc, "MEM.T_SLOWREAD a\r\nMULTI\r\nMEM.T_SLOWREAD a\r\nMEM.T_READ a\r\nEXEC\r\nPING\r\n")
	r, err := readReply(c.br)
	if re, ok := r.(*ReplyError); err != nil || !ok || !strings.HasPrefix(re.Msg, "TIMEOUT ") {
		t.Fatalf("slow read: %v %v, want -TIMEOUT", r, err)
	}
	for range 3 {
		readReply(c.br) // +OK, +QUEUED, +QUEUED
	}
	r, err = readReply(c.br)
	a, ok := r.([]any)
	if err != nil || !ok || len(a) != 2 {
		t.Fatalf("EXEC: %v %v", r, err)
	}
	// The slow read stopped, and the read after it, queued in the same
	// EXEC, did not start (TestTxSkipsReadsOnceItsContextEnds).
	for i, e := range a {
		if re, ok := e.(*ReplyError); !ok || !strings.HasPrefix(re.Msg, "TIMEOUT ") {
			t.Fatalf("EXEC's element %d: %v, want -TIMEOUT", i, e)
		}
	}
	if r, err := readReply(c.br); err != nil || r != "PONG" {
		t.Fatalf("PING: %v %v", r, err)
	}
	if got := ts.cfg.BusyTimeout; got != 100*time.Millisecond {
		t.Fatalf("cfg.BusyTimeout %v", got)
	}
}

// TestDisconnectCancelsACommand: a client that disconnects while its
// command runs has that command's context cancelled, alone or in EXEC.
func TestDisconnectCancelsACommand(t *testing.T) {
	for _, req := range []string{"MEM.T_SLOWREAD a\r\n", "MULTI\r\nMEM.T_SLOWREAD a\r\nEXEC\r\n"} {
		g := newGate(t)
		ts := startServer(t, Config{BusyTimeout: -1}, g.register)
		nc := ts.rawConn(t)
		io.WriteString(nc, req)
		g.waitStarted(t)
		nc.Close()
		select {
		case err := <-g.ended:
			if err == nil {
				t.Fatalf("%q: ended without an error", req)
			}
		case <-time.After(waitBound):
			t.Fatalf("%q: the command was not cancelled when its client disconnected", req)
		}
	}
}

// TestBusyTimeoutConfig: CONFIG GET reports busy-timeout in milliseconds;
// 0 means unlimited.
func TestBusyTimeoutConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg  time.Duration
		want string
	}{{0, "5000"}, {-1, "0"}, {250 * time.Millisecond, "250"}} {
		ts := startServer(t, Config{BusyTimeout: tc.cfg}, nil)
		c := newTxConn(t, ts)
		c.do("CONFIG GET busy-timeout\r\n", "*2\r\n$12\r\nbusy-timeout\r\n$"+
			strconv.Itoa(len(tc.want))+"\r\n"+tc.want+"\r\n")
	}
}

// TestCollLocksBounded: the lock table keeps at most keepIdleLocks entries
// no one holds, however many names clients send; a held entry stays.
func TestCollLocksBounded(t *testing.T) {
	var tb collLocks
	held := tb.get([]byte("held"))
	for i := range 3 * keepIdleLocks {
		tb.put(tb.get([]byte(strconv.Itoa(i))))
	}
	if n := len(tb.m); n > keepIdleLocks+1 {
		t.Fatalf("%d entries after %d names, want at most %d", n, 3*keepIdleLocks, keepIdleLocks+1)
	}
	if tb.get([]byte("held")) != held {
		t.Fatal("a held entry was dropped")
	}
}

// untilDone replies +OK once its command's context ends (a step that
// finishes after the deadline and ignores it).
func (g *gate) untilDone(c *Ctx, args [][]byte) error {
	g.started <- string(args[0])
	select {
	case <-c.Context().Done():
	case <-time.After(waitBound):
	}
	c.WriteOK()
	return nil
}

// TestTxSkipsReadsOnceItsContextEnds: once an EXEC's busy-timeout has
// passed, or its client has gone, its queued reads that have not started
// do not run (-TIMEOUT as their elements); its writes still run.
func TestTxSkipsReadsOnceItsContextEnds(t *testing.T) {
	for _, gone := range []bool{false, true} {
		g := newGate(t)
		cfg := Config{BusyTimeout: 100 * time.Millisecond}
		if gone {
			cfg.BusyTimeout = -1 // only the disconnection ends it
		}
		ts := startServer(t, cfg, func(s *Server) {
			g.register(s)
			s.Register("MEM.T_UNTILDONE", 1, g.untilDone, ReadOnly)
		})
		c := newTxConn(t, ts)
		c.nc.SetDeadline(time.Now().Add(waitBound))
		io.WriteString(c.nc, "MULTI\r\nMEM.T_UNTILDONE a\r\nMEM.T_READ r1\r\nMEM.T_WRITE w1\r\nMEM.T_READ r2\r\nEXEC\r\n")
		g.waitStarted(t)
		if gone {
			c.nc.Close()
			deadline := time.Now().Add(waitBound)
			for {
				g.mu.Lock()
				n := len(g.order)
				g.mu.Unlock()
				if n > 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the write after the client left did not run")
				}
				time.Sleep(time.Millisecond)
			}
		} else {
			for range 5 {
				readReply(c.br) // +OK, +QUEUED ...
			}
			r, err := readReply(c.br)
			a, ok := r.([]any)
			if err != nil || !ok || len(a) != 4 || a[0] != "OK" || a[2] != "OK" {
				t.Fatalf("EXEC: %v %v", r, err)
			}
			for _, i := range []int{1, 3} {
				if re, ok := a[i].(*ReplyError); !ok || !strings.HasPrefix(re.Msg, "TIMEOUT ") {
					t.Fatalf("element %d: %v, want -TIMEOUT", i, a[i])
				}
			}
		}
		g.mu.Lock()
		got := strings.Join(g.order, ",")
		g.mu.Unlock()
		if got != "quick w1" {
			t.Fatalf("client gone %v: ran %q, want the write alone", gone, got)
		}
	}
}
