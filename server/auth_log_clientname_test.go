package server

import (
	"bufio"
	"strings"
	"testing"
)

// Every failed AUTH logs a WARN line: an unauthenticated client pipelining
// wrong passwords makes the server write one log line per 20 bytes it sends.
// (The failed-AUTH brakes are off here, so that one connection can fail
// 2000 times quickly: auth_throttle_test.go tests them.)
func TestAuthFailureLogFlood(t *testing.T) {
	ts := authServer(t, Config{AuthFailureDelay: -1, MaxAuthFailures: -1, AuthFailureRate: -1})
	c := ts.rawConn(t)
	const n = 2000
	go c.Write([]byte(strings.Repeat("AUTH x\r\n", n)))
	br := bufio.NewReader(c)
	for i := 0; i < n; i++ {
		if _, err := br.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	if got := strings.Count(ts.logBuf.String(), "authentication failed"); got > 100 {
		t.Fatalf("%d failed AUTHs from one unauthenticated connection wrote %d WARN log lines", n, got)
	}
}

// CLIENT SETNAME / SETINFO / HELLO SETNAME kept up to MaxBulkLen bytes per
// field for the life of the connection, outside every budget: they are
// now refused past maxClientString bytes.
func TestClientStringsBounded(t *testing.T) {
	ts := startServer(t, Config{}, nil)
	s := newRawSession(t, ts)
	long := strings.Repeat("n", maxClientString+1)
	for _, args := range [][]string{
		{"CLIENT", "SETNAME", long},
		{"CLIENT", "SETINFO", "LIB-NAME", long},
		{"CLIENT", "SETINFO", "LIB-VER", long},
		{"HELLO", "2", "SETNAME", long},
	} {
		if got := s.do(args...); !strings.HasPrefix(got, "-ERR client names and library names and versions are at most 256 bytes") {
			t.Fatalf("%s %s: %q", args[0], args[1], got)
		}
	}
	if got := s.do("CLIENT", "SETNAME", long[:maxClientString]); got != "+OK" {
		t.Fatalf("a name of exactly %d bytes: %q", maxClientString, got)
	}
}
