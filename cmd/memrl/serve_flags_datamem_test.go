package main

import (
	"strings"
	"testing"

	"github.com/memrl/memrl/server"
)

// TestServeFlagsMaxMemoryData (issue 26): --maxmemory, when given, bounds
// the data in memory as well as client buffers; left at its default it
// bounds client buffers only, so that no database is refused writes for
// having grown past the default of 1 GiB.
func TestServeFlagsMaxMemoryData(t *testing.T) {
	for _, tc := range []struct {
		args          string
		data, clients int64
	}{
		{"", 0, server.DefaultMaxMemory},
		{"--maxmemory 600mb", 600 << 20, 600 << 20},
		{"--maxmemory -1", 0, -1},
	} {
		o, err := parseServeFlags(strings.Fields(tc.args), envOf(nil))
		if err != nil {
			t.Fatal(err)
		}
		if o.cfg.MaxDataMemory != tc.data || o.cfg.MaxMemory != tc.clients {
			t.Errorf("%q: data %d, client buffers %d; want %d, %d", tc.args, o.cfg.MaxDataMemory, o.cfg.MaxMemory, tc.data, tc.clients)
		}
	}
}
