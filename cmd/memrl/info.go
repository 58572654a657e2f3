package main

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/memrl/memrl/simd"
)

func info(args []string) error {
	fmt.Printf("go\t%s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	fmt.Printf("cpus\t%d\n", runtime.NumCPU())
	fmt.Printf("simd\t%s\n", simd.Level())
	fmt.Printf("simd_supported\t%s\n", strings.Join(simd.Levels(), ","))
	if err := simd.EnvError(); err != nil {
		fmt.Printf("simd_override_refused\t%v\n", err)
	}
	return nil
}
