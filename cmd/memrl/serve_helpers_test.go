package main

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// waitServing waits until a started `memrl serve` answers rdb's PING. After
// 10 s it kills cmd and fails the test with what the server wrote to
// logPath ("" if nothing was kept).
func waitServing(t *testing.T, cmd *exec.Cmd, rdb *redis.Client, logPath string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); rdb.Ping(context.Background()).Err() != nil; {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			var logged []byte
			if logPath != "" {
				logged, _ = os.ReadFile(logPath)
			}
			t.Fatalf("memrl serve did not start:\n%s", logged)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
