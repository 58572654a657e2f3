package main

import (
	"flag"
	"fmt"
	"github.com/memrl/memrl/internal/cliflag"
	"runtime"
	"strings"

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
	fmt.Printf("cpus\t%d\n", runtime.NumCPU())
	fmt.Printf("simd\t%s\n", simd.Level())
	fmt.Printf("simd_supported\t%s\n", strings.Join(simd.Levels(), ","))
	if err := simd.EnvError(); err != nil {
		fmt.Printf("simd_override_refused\t%v\n", err)
	}
	return nil
}
