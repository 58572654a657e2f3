package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

func TestPGOProfileSetting(t *testing.T) {
	for _, tc := range []struct {
		settings []debug.BuildSetting
		want     string
	}{
		{nil, "off"},
		{[]debug.BuildSetting{{Key: "-compiler", Value: "gc"}}, "off"},
		{[]debug.BuildSetting{{Key: "-pgo", Value: "/src/memrl/cmd/memrl/default.pgo"}}, "default.pgo"},
		{[]debug.BuildSetting{{Key: "-pgo", Value: ""}}, "off"},
	} {
		if got := pgoProfile(tc.settings); got != tc.want {
			t.Errorf("pgoProfile(%v) = %q, want %q", tc.settings, got, tc.want)
		}
	}
}

// TestBuiltBinaryUsesTheProfile checks that `go build ./cmd/memrl`, as a
// user runs it, picks up cmd/memrl/default.pgo (bench/pgo/README.md): the
// binary's info names it. A GOFLAGS -pgo setting in the environment
// overrides the default, and the check follows it.
func TestBuiltBinaryUsesTheProfile(t *testing.T) {
	if _, err := os.Stat("default.pgo"); err != nil {
		t.Fatalf("cmd/memrl/default.pgo: %v", err)
	}
	want := "default.pgo"
	for _, f := range strings.Fields(os.Getenv("GOFLAGS")) {
		if v, ok := strings.CutPrefix(f, "-pgo="); ok {
			want = filepath.Base(v)
			if v == "auto" {
				want = "default.pgo"
			}
		}
	}
	out, err := exec.Command(buildMemrl(t), "info").Output()
	if err != nil {
		t.Fatalf("memrl info: %v", err)
	}
	if line := "pgo\t" + want + "\n"; !strings.Contains(string(out), line) {
		t.Fatalf("memrl info printed\n%s\nwant a line %q", out, line)
	}
}
