package server

import (
	"bytes"
	"io"
	"testing"
	"time"
)

// OutputTimeout is documented as "a write of its replies makes no progress
// for this long", but it is a deadline on the whole net.Conn.Write of one
// bulk: a client steadily reading a large payload (here 16 MiB at ~8 MB/s
// or less, i.e. 64 MiB at 1 MB/s with the 60 s default) is cut off
// mid-reply. The timeout (1 s) is far shorter than the reply takes to read
// (over 2 s), yet long enough that a reader descheduled for a moment on a
// loaded machine still makes progress within it.
func TestOutputTimeoutSlowButProgressing(t *testing.T) {
	const size = 16 << 20
	ts := startServer(t, Config{OutputTimeout: time.Second}, func(s *Server) {
		s.Register("BIG", 0, func(c *Ctx, _ [][]byte) error {
			c.WriteBulk(bytes.Repeat([]byte("x"), size))
			return nil
		}, ReadOnly)
	})
	c := ts.rawConn(t)
	c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := c.Write([]byte("BIG\r\n")); err != nil {
		t.Fatal(err)
	}
	want := len("$16777216\r\n") + size + 2
	got := 0
	buf := make([]byte, 64<<10)
	start := time.Now()
	for got < want {
		n, err := c.Read(buf)
		got += n
		if err == io.EOF {
			t.Fatalf("closed by the server after %d of %d bytes, though the client never stopped reading", got, want)
		}
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(8 * time.Millisecond) // at most 8 MB/s
	}
	if took := time.Since(start); took < 2*time.Second {
		t.Fatalf("the reply was read in %v: not longer than the output timeout, so the test proves nothing", took)
	}
}
