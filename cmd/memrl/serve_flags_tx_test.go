package main

import (
	"strings"
	"testing"
	"time"

	"github.com/memrl/memrl/server"
)

// TestServeFlagMaxQueuedCommands: --max-queued-commands reaches the
// server's Config; without it the default applies.
func TestServeFlagMaxQueuedCommands(t *testing.T) {
	o, err := parseServeFlags(strings.Fields("--max-queued-commands 5"), envOf(nil))
	if err != nil || o.cfg.MaxQueuedCommands != 5 {
		t.Fatalf("--max-queued-commands 5: %d %v", o.cfg.MaxQueuedCommands, err)
	}
	o, err = parseServeFlags(nil, envOf(nil))
	if err != nil || o.cfg.MaxQueuedCommands != server.DefaultMaxQueuedCommands {
		t.Fatalf("default: %d %v", o.cfg.MaxQueuedCommands, err)
	}
}

// TestServeFlagBusyTimeout: --busy-timeout is in milliseconds, <= 0 is
// unlimited (a negative Config value), and the default is the server's.
func TestServeFlagBusyTimeout(t *testing.T) {
	for _, tc := range []struct {
		args string
		want time.Duration
	}{
		{"", server.DefaultBusyTimeout},
		{"--busy-timeout 250", 250 * time.Millisecond},
		{"--busy-timeout 0", -1},
		{"--busy-timeout -5", -1},
	} {
		o, err := parseServeFlags(strings.Fields(tc.args), envOf(nil))
		if err != nil || o.cfg.BusyTimeout != tc.want {
			t.Fatalf("%q: %v %v, want %v", tc.args, o.cfg.BusyTimeout, err, tc.want)
		}
	}
}
