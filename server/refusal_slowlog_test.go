package server

import (
	"context"
	"crypto/tls"
	"net"
	"strings"
	"testing"
	"time"
)

// A connection refused by MaxClients on a TLS listener is never closed if
// the client sends no ClientHello: the refusal's Write runs the handshake,
// whose reads have no deadline (only a write deadline is set).
func TestTLSMaxClientsRefusalHangs(t *testing.T) {
	pki := newTestPKI(t)
	cfg, err := TLSConfig(pki.certFile, pki.keyFile, "")
	if err != nil {
		t.Fatal(err)
	}
	s := mustNew(t, Config{Addr: "127.0.0.1:0", TLS: cfg, MaxClients: 1})
	done := make(chan error, 1)
	go func() { done <- s.ListenAndServe() }()
	for s.Addr() == nil {
		time.Sleep(time.Millisecond)
	}
	t.Cleanup(func() { s.Shutdown(context.Background()); <-done })
	addr := s.Addr().String()
	// One legitimate client fills MaxClients.
	tc, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pki.pool})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	tc.Write([]byte("PING\r\n"))
	buf := make([]byte, 64)
	if n, err := tc.Read(buf); err != nil || !strings.HasPrefix(string(buf[:n]), "+PONG") {
		t.Fatalf("%q %v", buf[:n], err)
	}
	// A second one sends nothing: it should be refused and closed within ~1s.
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.SetReadDeadline(time.Now().Add(4 * time.Second))
	_, err = raw.Read(buf)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("refused connection still open after 4s (goroutine and fd held for ever)")
	}
}

// HELLO with SETNAME AUTH before AUTH leaves the password in SLOWLOG.
func TestSlowlogHelloPasswordLeak(t *testing.T) {
	ts := authServer(t, Config{})
	ts.SetSlowlog(0, 128)
	s := newRawSession(t, ts)
	if got := s.do("HELLO", "2", "SETNAME", "AUTH", "AUTH", "default", "s3cret"); got != "*14" {
		t.Fatalf("HELLO: %q", got)
	}
	for i := 0; i < 25; i++ {
		s.line()
	}
	ts.obs.slow.mu.Lock()
	entries := ts.obs.slow.newestLocked(128)
	ts.obs.slow.mu.Unlock()
	for _, e := range entries {
		for _, a := range e.args {
			if a == "s3cret" {
				t.Fatalf("password in SLOWLOG entry %q", e.args)
			}
		}
	}
}
