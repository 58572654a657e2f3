package main

import (
	"strings"
	"testing"

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
