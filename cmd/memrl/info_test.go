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
// binary's info names it. A -pgo setting in GOFLAGS (the environment's or
// `go env -w`'s, as `go env GOFLAGS` reports it) overrides the default,
// and the check follows it.
func TestBuiltBinaryUsesTheProfile(t *testing.T) {
	if _, err := os.Stat("default.pgo"); err != nil {
		t.Fatalf("cmd/memrl/default.pgo: %v", err)
	}
	goflags, err := exec.Command("go", "env", "GOFLAGS").Output()
	if err != nil {
		t.Fatalf("go env GOFLAGS: %v", err)
	}
	want := wantPGO(string(goflags))
	out, err := exec.Command(buildMemrl(t), "info").Output()
	if err != nil {
		t.Fatalf("memrl info: %v", err)
	}
	if line := "pgo\t" + want + "\n"; !strings.Contains(string(out), line) {
		t.Fatalf("memrl info printed\n%s\nwant a line %q", out, line)
	}
}

// wantPGO is what `memrl info` should name for a binary built by plain
// `go build` under these GOFLAGS: the base name of the last -pgo (or
// --pgo) setting, default.pgo for auto or none.
func wantPGO(goflags string) string {
	want := "default.pgo"
	for _, f := range strings.Fields(goflags) {
		if v, ok := strings.CutPrefix(strings.TrimLeft(f, "-"), "pgo="); ok && strings.HasPrefix(f, "-") {
			want = filepath.Base(v)
			if v == "auto" {
				want = "default.pgo"
			}
		}
	}
	return want
}

func TestWantPGO(t *testing.T) {
	for goflags, want := range map[string]string{
		"":                           "default.pgo",
		"-mod=mod":                   "default.pgo",
		"-mod=mod -pgo=off":          "off",
		"--pgo=/x/y/other.pgo":       "other.pgo",
		"-pgo=off -pgo=auto":         "default.pgo",
		"-race -pgo=/tmp/p.pprof -v": "p.pprof",
	} {
		if got := wantPGO(goflags); got != want {
			t.Errorf("wantPGO(%q) = %q, want %q", goflags, got, want)
		}
	}
}
