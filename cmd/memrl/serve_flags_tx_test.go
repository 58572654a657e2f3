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

// TestServeFlagsAuthThrottle: the failed-AUTH brakes are flags; 0 turns
// each off (server.Config's < 0), the defaults are server's.
func TestServeFlagsAuthThrottle(t *testing.T) {
	for _, tc := range []struct {
		args        string
		delay       time.Duration
		max, perSec int
	}{
		{"", server.DefaultAuthFailureDelay, server.DefaultMaxAuthFailures, server.DefaultAuthFailureRate},
		{"--auth-failure-delay 250ms --max-auth-failures 3 --auth-failure-rate 20", 250 * time.Millisecond, 3, 20},
		{"--auth-failure-delay 0 --max-auth-failures 0 --auth-failure-rate 0", -1, -1, -1},
	} {
		o, err := parseServeFlags(strings.Fields(tc.args), envOf(nil))
		if err != nil || o.cfg.AuthFailureDelay != tc.delay || o.cfg.MaxAuthFailures != tc.max || o.cfg.AuthFailureRate != tc.perSec {
			t.Fatalf("%q: %v %v %v %v, want %v %v %v", tc.args, o.cfg.AuthFailureDelay, o.cfg.MaxAuthFailures,
				o.cfg.AuthFailureRate, err, tc.delay, tc.max, tc.perSec)
		}
	}
}
