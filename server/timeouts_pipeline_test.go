package server

import (
	"bufio"
	"strings"
	"testing"
	"time"
)

// A client that keeps a pipeline streaming, each write ending mid-command,
// completes a command every 40ms, yet is closed after FrameTimeout: frameStart
// is only reset by a read made at a command boundary.
func TestFrameTimeoutPipelineStream(t *testing.T) {
	ts := startServer(t, Config{FrameTimeout: 300 * time.Millisecond}, nil)
	c := ts.rawConn(t)
	br := bufio.NewReader(c)
	if _, err := c.Write([]byte("*1\r\n$4\r\nPI")); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 30; i++ { // 1.2 s, each command completes within 40 ms
		time.Sleep(40 * time.Millisecond)
		if _, err := c.Write([]byte("NG\r\n*1\r\n$4\r\nPI")); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		line, err := br.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "+PONG") {
			t.Fatalf("command %d (%v after start): %q %v", i, time.Duration(i+1)*40*time.Millisecond, line, err)
		}
	}
}
