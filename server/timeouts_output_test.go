package server

import (
	"bytes"
	"io"
	"testing"
	"time"
)

// OutputTimeout is documented as "a write of its replies makes no progress
// for this long", but it is a deadline on the whole net.Conn.Write of one
// bulk: a client steadily reading a large payload (here 16 MiB at ~8 MB/s,
// i.e. 64 MiB at 1 MB/s with the 60 s default) is cut off mid-reply.
func TestOutputTimeoutSlowButProgressing(t *testing.T) {
	const size = 16 << 20
	ts := startServer(t, Config{OutputTimeout: 300 * time.Millisecond}, func(s *Server) {
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
	for got < want {
		n, err := c.Read(buf)
		got += n
		if err == io.EOF {
			t.Fatalf("closed by the server after %d of %d bytes, though the client never stopped reading", got, want)
		}
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(4 * time.Millisecond) // ~ 8-16 MB/s
	}
}
