// Command annbench runs the ANN benchmark (the same code as `memrl bench
// ann`) on its own; see package bench/ann.
package main

import (
	"fmt"
	"os"

	"github.com/memrl/memrl/bench/ann"
)

func main() {
	if err := ann.Main(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "annbench:", err)
		os.Exit(1)
	}
}
