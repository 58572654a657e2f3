package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/memrl/memrl/internal/cliflag"
)

// TestHelpListsEverySubcommand: memrl help names every command, every
// benchmark, every cluster action and every dump kind that runs, and each
// command's own usage names its sub-commands; each benchmark's --help runs
// (the table's function is that benchmark's). memrl help once listed 5 of
// the 10 benchmarks and no cluster add/remove.
func TestHelpListsEverySubcommand(t *testing.T) {
	top := usage()
	for name := range commands {
		if !strings.Contains(top, "memrl "+name+" ") {
			t.Errorf("memrl help does not list the command %q:\n%s", name, top)
		}
	}
	for _, tc := range []struct {
		parent string
		table  []subcommand
		own    string // the parent's --help
	}{
		{"bench", benchCommands, benchUsage()},
		{"cluster", clusterCommands, clusterUsage()},
		{"dump", dumpKinds, dumpUsage()},
	} {
		if len(tc.table) == 0 {
			t.Fatalf("memrl %s has no sub-commands", tc.parent)
		}
		for _, s := range tc.table {
			line := "memrl " + tc.parent + " " + s.name + " "
			if !strings.Contains(tc.own, line) {
				t.Errorf("memrl %s --help lacks %q:\n%s", tc.parent, line, tc.own)
			}
			if (tc.parent == "bench" && !strings.Contains(top, line)) || !strings.Contains(top, s.name) {
				t.Errorf("memrl help lacks %s %s:\n%s", tc.parent, s.name, top)
			}
			if tc.parent != "dump" && s.run == nil {
				t.Errorf("memrl %s %s runs nothing", tc.parent, s.name)
			}
		}
	}
	if !strings.Contains(top, "memrl cluster start|stop|add|remove|reshard|rebalance ") {
		t.Errorf("memrl help's cluster line:\n%s", top)
	}
	for _, b := range benchCommands {
		if err := bench([]string{b.name, "--help"}); err != nil && !errors.Is(err, cliflag.ErrHelp) {
			t.Errorf("memrl bench %s --help: %v", b.name, err)
		}
	}
	if err := bench([]string{"nope"}); !cliflag.IsUsage(err) || !strings.Contains(err.Error(), "memrl bench maintain") {
		t.Errorf("memrl bench nope: %v, want a usage error listing the benchmarks", err)
	}
	if err := clusterCmd([]string{"nope"}); !cliflag.IsUsage(err) || !strings.Contains(err.Error(), "start, stop, add, remove") {
		t.Errorf("memrl cluster nope: %v", err)
	}
}
