package server

import (
	"errors"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// metricsLogLines returns the log lines of ts about metrics.
func metricsLogLines(ts *testServer) []string {
	var out []string
	for _, l := range strings.Split(ts.logBuf.String(), "\n") {
		if strings.Contains(l, "server: metrics:") {
			out = append(out, l)
		}
	}
	return out
}

// TestMetricsScraperHangUpIsNotAnError: a scraper that closes its
// connection before the reply is written is logged at DEBUG, not ERROR;
// a failure to gather metrics is still an ERROR.
func TestMetricsScraperHangUpIsNotAnError(t *testing.T) {
	ts := startServer(t, Config{}, nil)
	p := slogPrinter{ts.Server}
	p.Println("error encoding and sending metric family:", &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)})
	p.Println("error encoding and sending metric family:", &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.ECONNRESET)})
	p.Println("error gathering metrics:", errors.New("collector failed"))
	lines := metricsLogLines(ts)
	if len(lines) != 3 || !strings.Contains(lines[0], "level=DEBUG") || !strings.Contains(lines[1], "level=DEBUG") ||
		!strings.Contains(lines[2], "level=ERROR") || !strings.Contains(lines[2], "collector failed") {
		t.Fatalf("log lines:\n%s\nwant two hang-ups at DEBUG, then the gathering failure at ERROR", strings.Join(lines, "\n"))
	}

	// Over a real connection: the scraper sends its request and resets the
	// connection at once, so the reply's writes fail. Tried a few times in
	// case a reply ever fits the socket's buffer before the reset lands.
	ts = startServer(t, Config{}, nil)
	base := serveMetrics(t, ts, false)
	addr := strings.TrimPrefix(base, "http://")
	hungUp := false
	for try := 0; try < 20 && !hungUp; try++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write([]byte("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		c.(*net.TCPConn).SetLinger(0) // close with RST
		c.Close()
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if strings.Contains(ts.logBuf.String(), "the scraper hung up") {
				hungUp = true
				break
			}
		}
	}
	for _, l := range metricsLogLines(ts) {
		if !strings.Contains(l, "level=DEBUG") {
			t.Errorf("a scraper's hang-up logged above DEBUG: %s", l)
		}
	}
	if !hungUp {
		t.Fatalf("no hang-up logged after 20 reset scrapes; log:\n%s", ts.logBuf.String())
	}
}
