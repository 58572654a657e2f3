package main

import (
	"strings"
	"testing"
)

// TestServeFlagsMaxClientsPerUser: --maxclients-per-user reaches the
// server's Config as given; left out it is 0, the server's default
// (three quarters of --maxclients), and < 0 means no cap.
func TestServeFlagsMaxClientsPerUser(t *testing.T) {
	for args, want := range map[string]int{"": 0, "--maxclients-per-user 5": 5, "--maxclients-per-user -1": -1} {
		o, err := parseServeFlags(strings.Fields(args), envOf(nil))
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		if o.cfg.MaxClientsPerUser != want {
			t.Errorf("%q: MaxClientsPerUser = %d, want %d", args, o.cfg.MaxClientsPerUser, want)
		}
	}
}
