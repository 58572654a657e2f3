package main

import (
	"flag"
	"fmt"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/memrl/memrl/internal/cliflag"
	"github.com/memrl/memrl/simd"
)

func info(args []string) error {
	fs := flag.NewFlagSet("info", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: memrl info   (build and CPU facts: Go, CPUs, SIMD kernels in use)")
	}
	if err := cliflag.Parse(fs, args, 0); err != nil {
		return err
	}
	fmt.Printf("version\t%s\n", versionLine())
	fmt.Printf("go\t%s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	fmt.Printf("pgo\t%s\n", pgoProfile(buildSettings()))
	fmt.Printf("cpus\t%d\n", runtime.NumCPU())
	fmt.Printf("simd\t%s\n", simd.Level())
	fmt.Printf("simd_supported\t%s\n", strings.Join(simd.Levels(), ","))
	if err := simd.EnvError(); err != nil {
		fmt.Printf("simd_override_refused\t%v\n", err)
	}
	return nil
}

// buildSettings returns the build's recorded settings, nil when the binary
// has none.
func buildSettings() []debug.BuildSetting {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	return bi.Settings
}

// pgoProfile names the profile the binary was built with (the file's base
// name: cmd/memrl/default.pgo is picked up by `go build`, see
// bench/pgo/README.md), or "off": `go test` here, `go build -pgo=off`, or
// a build that recorded no settings.
func pgoProfile(settings []debug.BuildSetting) string {
	for _, s := range settings {
		if s.Key == "-pgo" && s.Value != "" {
			return filepath.Base(s.Value)
		}
	}
	return "off"
}
