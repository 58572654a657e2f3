package server

import (
	"bufio"
	"strings"
	"testing"
	"time"
)

// buildArgs allocates args ([][]byte, 24 B per argument) after the last
// account call and the next ReadCommand drops it before accounting: a
// million-argument command makes the server hold 24 MiB that are never
// reserved from the Budget (resp_reader.go's comment says they count).
func TestBudgetArgsNotReserved(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	ts := startServer(t, Config{}, func(s *Server) {
		s.Register("SLOW", 0, func(c *Ctx, args [][]byte) error {
			close(entered)
			<-release
			c.WriteInt(int64(len(args)))
			return nil
		}, ReadOnly)
	})
	const n = 1 << 20
	c := ts.rawConn(t)
	var b strings.Builder
	b.WriteString("*1048576\r\n$4\r\nSLOW\r\n")
	for i := 1; i < n; i++ {
		b.WriteString("$0\r\n\r\n")
	}
	go c.Write([]byte(b.String()))
	select {
	case <-entered:
	case <-time.After(20 * time.Second):
		t.Fatal("SLOW not reached")
	}
	used := ts.budget.Used()
	close(release)
	bufio.NewReader(c).ReadString('\n')
	// offs: 2 ints per argument = 16 MiB; args: one slice header each = 24 MiB.
	if want := int64(n * (16 + 24)); used < want {
		t.Fatalf("while the command runs the Budget holds %d bytes, want >= %d (offs+args)", used, want)
	}
}
