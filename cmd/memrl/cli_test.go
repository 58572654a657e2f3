package main

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// TestCommandLine runs the built binary the way a new user would: help in
// every form exits 0 and prints usage to stdout, a stray argument or an
// unknown command exits 2 and starts nothing.
func TestCommandLine(t *testing.T) {
	bin := buildMemrl(t)
	for _, tc := range []struct {
		args   string
		status int
		stdout string // must contain
		stderr string // must contain
	}{
		{"", 0, "memrl serve [flags]", ""},
		{"help", 0, "memrl serve [flags]", ""},
		{"--help", 0, "memrl serve [flags]", ""},
		{"serve --help", 0, "-addr", ""},
		{"help serve", 0, "-requirepass", ""},
		{"bench --help", 0, "memrl bench rewards", ""},
		{"bench ann --help", 0, "-nprobe", ""},
		{"bench rewards --help", 0, "-clients", ""},
		{"bench durability -h", 0, "-duration", ""},
		{"bench serverann --help", 0, "-server-gomaxprocs", ""},
		{"bench serverann --nq 10", 2, "", "need --base, --query and --gt"},
		{"bench maintain --help", 0, "-reward-share", ""},
		{"bench maintain --n 1", 2, "", "--n must be at least 2"},
		{"version", 0, "memrl " + "0.", ""},
		{"info", 0, "simd", ""},
		{"info", 0, "pgo\t", ""},
		{"nope", 2, "", `unknown command "nope"`},
		{"bench", 2, "", "which benchmark"},
		{"bench nope", 2, "", `unknown benchmark "nope"`},
		{"serve extra --addr 127.0.0.1:7399 --dir x", 2, "", `unexpected argument "extra"`},
		{"serve --no-such-flag", 2, "", "no-such-flag"},
		{"serve --sync sometimes", 2, "", "sometimes"},
		{"version now", 2, "", `unexpected argument "now"`},
		{"bench ann --k 10 stray", 2, "", `unexpected argument "stray"`},
		{"serve --addr 0.0.0.0:0", 2, "", "--protected-mode no"},
	} {
		cmd := exec.Command(bin, strings.Fields(tc.args)...)
		cmd.Dir = t.TempDir() // a serve that wrongly starts would leave memrl-data here
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		status := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			status = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("memrl %s: %v", tc.args, err)
		}
		if status != tc.status || !strings.Contains(out.String(), tc.stdout) || !strings.Contains(errOut.String(), tc.stderr) {
			t.Errorf("memrl %s: exit %d, stdout %q, stderr %q; want exit %d, stdout containing %q, stderr containing %q",
				tc.args, status, trim(out.String()), trim(errOut.String()), tc.status, tc.stdout, tc.stderr)
		}
	}
}

func trim(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}
