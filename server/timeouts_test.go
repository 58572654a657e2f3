package server

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// waitClosed returns how long the server took to close c (reading and
// discarding what it sends), failing after limit.
func waitClosed(t *testing.T, c net.Conn, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	c.SetReadDeadline(start.Add(limit))
	_, err := io.Copy(io.Discard, c)
	if err != nil {
		t.Fatalf("connection not closed by the server within %v: %v", limit, err)
	}
	return time.Since(start)
}

// waitClients waits until the server has n live connections.
func waitClients(t *testing.T, ts *testServer, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ts.clientCount() != n; {
		if time.Now().After(deadline) {
			t.Fatalf("%d clients, want %d", ts.clientCount(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestFrameTimeout is the hostile run's fourth finding: connections that
// send half a frame and stall held MaxClients' slots for ever.
func TestFrameTimeout(t *testing.T) {
	ts := startServer(t, Config{MaxClients: 2, FrameTimeout: 200 * time.Millisecond}, nil)
	var stalled []net.Conn
	for _, half := range []string{"*2\r\n$4\r\nPING", "PING and no line end"} {
		c := ts.rawConn(t)
		if _, err := c.Write([]byte(half)); err != nil {
			t.Fatal(err)
		}
		stalled = append(stalled, c)
	}
	waitClients(t, ts, 2)
	// MaxClients is reached: a newcomer is refused ...
	c := ts.rawConn(t)
	if got := readUntilEOF(t, c); !strings.Contains(got, "max number of clients") {
		t.Fatalf("third client: %q", got)
	}
	// ... until the half frames time out.
	for _, c := range stalled {
		if d := waitClosed(t, c, 3*time.Second); d > 2*time.Second {
			t.Errorf("closed after %v", d)
		}
	}
	waitClients(t, ts, 0)
	s := newRawSession(t, ts)
	if got := s.do("PING"); got != "+PONG" {
		t.Fatalf("after the timeouts: %q", got)
	}
	if ts.statTimeouts.Load() != 2 {
		t.Errorf("timeouts counted %d, want 2", ts.statTimeouts.Load())
	}
}

// TestFrameTimeoutIsPerCommand: a client that trickles one command's bytes
// cannot extend its deadline, while one that sends whole commands slowly
// is not disturbed.
func TestFrameTimeoutIsPerCommand(t *testing.T) {
	ts := startServer(t, Config{FrameTimeout: 300 * time.Millisecond}, nil)
	slow := newRawSession(t, ts)
	for range 4 { // whole commands, 150 ms apart: 600 ms in all
		if got := slow.do("PING"); got != "+PONG" {
			t.Fatalf("slow but whole commands: %q", got)
		}
		time.Sleep(150 * time.Millisecond)
	}
	trickle := ts.rawConn(t)
	start := time.Now()
	for _, b := range []byte("*1\r\n$4\r\nPING") {
		if _, err := trickle.Write([]byte{b}); err != nil {
			break // closed by the server
		}
		time.Sleep(60 * time.Millisecond)
	}
	waitClosed(t, trickle, 3*time.Second)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("trickled frame closed after %v", d)
	}
}

func TestIdleTimeout(t *testing.T) {
	ts := startServer(t, Config{IdleTimeout: 200 * time.Millisecond}, nil)
	s := newRawSession(t, ts)
	if got := s.do("PING"); got != "+PONG" {
		t.Fatal(got)
	}
	if d := waitClosed(t, s.c, 3*time.Second); d < 150*time.Millisecond {
		t.Errorf("idle connection closed after only %v", d)
	}
}

func TestAuthTimeout(t *testing.T) {
	ts := authServer(t, Config{AuthTimeout: 200 * time.Millisecond})
	idle := ts.rawConn(t)
	pinger := newRawSession(t, ts) // PING does not count as authenticating
	if got := pinger.do("PING"); got != "+PONG" {
		t.Fatal(got)
	}
	authed := newRawSession(t, ts)
	if got := authed.do("AUTH", "s3cret"); got != "+OK" {
		t.Fatal(got)
	}
	waitClosed(t, idle, 3*time.Second)
	waitClosed(t, pinger.c, 3*time.Second)
	time.Sleep(100 * time.Millisecond)
	if got := authed.do("PING"); got != "+PONG" {
		t.Fatalf("authenticated client after the auth timeout: %q", got)
	}
}

// TestClientThatDoesNotReadIsDisconnected: a client that pipelines
// commands with large replies and never reads them is disconnected after
// OutputTimeout, while another client is served all along.
func TestClientThatDoesNotReadIsDisconnected(t *testing.T) {
	ts := startServer(t, Config{OutputTimeout: 300 * time.Millisecond}, nil)
	hog := ts.rawConn(t)
	big := strings.Repeat("x", 1<<20)
	cmd := "*2\r\n$4\r\nECHO\r\n$" + itoa(len(big)) + "\r\n" + big + "\r\n"
	go func() {
		for range 64 { // 64 MiB of replies, far more than socket buffers hold
			if _, err := hog.Write([]byte(cmd)); err != nil {
				return
			}
		}
	}()
	honest := newRawSession(t, ts)
	deadline := time.Now().Add(5 * time.Second)
	for ts.statOutputTimeouts.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the client that does not read was not disconnected")
		}
		if got := honest.do("PING"); got != "+PONG" {
			t.Fatalf("honest client: %q", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
	waitClients(t, ts, 1)
}
