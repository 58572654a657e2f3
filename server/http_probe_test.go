package server

import (
	"strings"
	"sync/atomic"
	"testing"
)

// TestHTTPRequestIsDropped is the hostile run's first finding: a web page
// could POST "MEM.DROP victims" to the server (curl -X POST --data-binary
// $'MEM.DROP victims\r\n' http://127.0.0.1:6390/): the header lines got
// "unknown command" and the body ran. A request that looks like HTTP must
// close the connection before anything in it runs.
func TestHTTPRequestIsDropped(t *testing.T) {
	for _, tc := range []struct{ name, req string }{
		{"curl POST", "POST / HTTP/1.1\r\nHost: 127.0.0.1:6390\r\nUser-Agent: curl/8.0\r\nAccept: */*\r\n" +
			"Content-Length: 12\r\nContent-Type: application/x-www-form-urlencoded\r\n\r\nDROPIT v\r\n"},
		{"GET", "GET / HTTP/1.1\r\nHost: x\r\n\r\nDROPIT v\r\n"},
		{"PUT lower case", "put /x HTTP/1.0\r\n\r\nDROPIT v\r\n"},
		{"Host header first", "Host: evil.example\r\nDROPIT v\r\n"},
		{"as a RESP array", "*2\r\n$4\r\nPOST\r\n$1\r\n/\r\n*2\r\n$6\r\nDROPIT\r\n$1\r\nv\r\n"},
		{"after a valid command", "PING\r\nPOST / HTTP/1.1\r\n\r\nDROPIT v\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ran atomic.Int64
			ts := startServer(t, Config{}, func(s *Server) {
				s.Register("DROPIT", 1, func(c *Ctx, args [][]byte) error {
					ran.Add(1)
					c.WriteOK()
					return nil
				})
			})
			c := ts.rawConn(t)
			if _, err := c.Write([]byte(tc.req)); err != nil {
				t.Fatal(err)
			}
			got := readUntilEOF(t, c)
			if ran.Load() != 0 {
				t.Fatalf("the command in the HTTP body ran %d times", ran.Load())
			}
			if strings.Contains(got, "+OK") || strings.Contains(got, "unknown command") {
				t.Fatalf("server answered the HTTP request: %q", got)
			}
			if strings.HasPrefix(tc.req, "PING") && got != "+PONG\r\n" {
				t.Fatalf("reply before the probe = %q, want +PONG only", got)
			}
			if !strings.Contains(ts.logBuf.String(), "SECURITY ATTACK") {
				t.Errorf("no security warning logged: %s", ts.logBuf.String())
			}
		})
	}
}

func TestLooksLikeHTTP(t *testing.T) {
	for _, tc := range []struct {
		line string
		want bool
	}{
		{"POST / HTTP/1.1", true},
		{"post", true},
		{"Host: x", true},
		{"User-Agent: curl", true},
		{"GET / HTTP/1.1", true},
		{"GET /", true},
		{"get http://x/ HTTP/1.0", true},
		{"OPTIONS * HTTP/1.1", true},
		{"DELETE x HTTP/1.1", true},
		{"GET", false},
		{"GET key", false},
		{"MEM.GET plans 1", false},
		{"MEM.DEL plans 1 2", false},
		{"PING", false},
		{"ECHO /", false},
	} {
		var args [][]byte
		for _, f := range strings.Fields(tc.line) {
			args = append(args, []byte(f))
		}
		if got := looksLikeHTTP(args); got != tc.want {
			t.Errorf("looksLikeHTTP(%q) = %v, want %v", tc.line, got, tc.want)
		}
	}
}
