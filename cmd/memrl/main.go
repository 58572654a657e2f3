// Command memrl runs the memrl server and its tools.
//
//	memrl serve [--dir ./memrl-data] [--addr 127.0.0.1:6390] [--sync always|interval|none]
//	memrl bench ann|rewards [flags]
//	memrl info
//
// See README.md and docs/PROTOCOL.md.
package main

import (
	"fmt"
	"os"
)

const usage = `usage:
  memrl serve [--dir DIR] [--addr HOST:PORT] [--sync always|interval|none]   run the server
  memrl bench ann [flags]       recall against latency of the phase-1 index
  memrl bench rewards [flags]   acknowledged rewards per second over the protocol
  memrl bench durability [flags] fsync latency, in-process rewards, recovery time, checkpoint stalls
  memrl bench hostile [flags]   an honest client's answers and latency while hostile clients attack
  memrl info                    build and CPU facts (SIMD kernels in use)
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "bench":
		err = bench(os.Args[2:])
	case "info":
		err = info(os.Args[2:])
	case "-h", "--help", "help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "memrl: unknown command %q\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "memrl:", err)
		os.Exit(1)
	}
}
