package cliflag

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"
)

func newFS() (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:6390", "address")
	return fs, addr
}

func TestParse(t *testing.T) {
	var out bytes.Buffer
	Stdout = &out
	defer func() { Stdout = nil }()

	fs, addr := newFS()
	if err := Parse(fs, []string{"--addr", "127.0.0.1:1"}, 0); err != nil || *addr != "127.0.0.1:1" {
		t.Fatalf("Parse = %v, addr %q", err, *addr)
	}

	fs, _ = newFS()
	if err := Parse(fs, []string{"--help"}, 0); !errors.Is(err, ErrHelp) {
		t.Fatalf("--help: %v, want ErrHelp", err)
	}
	if !strings.Contains(out.String(), "-addr") {
		t.Fatalf("--help printed %q, want the usage on Stdout", out.String())
	}

	// The stray-argument case of the hostile run: everything after
	// "extra" used to be dropped silently.
	fs, addr = newFS()
	err := Parse(fs, []string{"extra", "--addr", "127.0.0.1:7399"}, 0)
	if !IsUsage(err) || !strings.Contains(err.Error(), `unexpected argument "extra"`) {
		t.Fatalf("stray argument: %v, want a usage error naming it", err)
	}

	fs, _ = newFS()
	if err := Parse(fs, []string{"--nope"}, 0); !IsUsage(err) || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("unknown flag: %v, want a usage error naming it", err)
	}

	fs, _ = newFS()
	if err := Parse(fs, []string{"a"}, 1); err != nil {
		t.Fatalf("one allowed argument: %v", err)
	}
}
