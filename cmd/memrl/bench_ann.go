package main

import (
	"os"

	"github.com/memrl/memrl/bench/ann"
)

// benchANN runs the phase-1 index benchmark (bench/ann).
func benchANN(args []string) error { return ann.Main(args, os.Stdout) }
