package main

import (
	"fmt"
	"runtime"

	"github.com/memrl/memrl/simd"
)

func info(args []string) error {
	fmt.Printf("go\t%s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	fmt.Printf("cpus\t%d\n", runtime.NumCPU())
	fmt.Printf("simd\t%s\n", simd.Level())
	return nil
}
