package main

import (
	"flag"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/memrl/memrl/internal/cliflag"
	"github.com/memrl/memrl/server"
	"github.com/memrl/memrl/simd"
)

// version prints one line: memrl's version (and the commit it was built
// from, when the build recorded it), the Go toolchain and the SIMD level
// the kernels run at.
func version(args []string) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprintln(fs.Output(), "usage: memrl version") }
	if err := cliflag.Parse(fs, args, 0); err != nil {
		return err
	}
	fmt.Println(versionLine())
	return nil
}

func versionLine() string {
	v := "memrl " + server.Version
	if rev := buildRevision(); rev != "" {
		v += " (" + rev + ")"
	}
	return fmt.Sprintf("%s %s %s/%s simd=%s", v, runtime.Version(), runtime.GOOS, runtime.GOARCH, simd.Level())
}

// buildRevision returns the VCS revision recorded by `go build` (12 hex
// digits, "+dirty" if the tree had changes), or "" (go run, go test).
func buildRevision() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev == "" {
		return ""
	}
	return rev + dirty
}
