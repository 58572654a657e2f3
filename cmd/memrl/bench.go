package main

import (
	"fmt"
	"io"
	"os"

	"github.com/memrl/memrl/bench/cluster"
	"github.com/memrl/memrl/bench/durability"
	"github.com/memrl/memrl/bench/filter"
	"github.com/memrl/memrl/bench/hostile"
	"github.com/memrl/memrl/bench/loop"
	"github.com/memrl/memrl/bench/madd"
	"github.com/memrl/memrl/bench/maintain"
	"github.com/memrl/memrl/bench/rewards"
	"github.com/memrl/memrl/bench/serverann"
	"github.com/memrl/memrl/internal/cliflag"
)

// benchCommands are memrl bench's benchmarks, in the order the usage
// lists them.
var benchCommands = []subcommand{
	{"ann", "[flags]", "recall against latency of the phase-1 index", benchANN},
	{"rewards", "[flags]", "acknowledged rewards per second over the protocol", mainOf(rewards.Main)},
	{"durability", "[flags]", "fsync latency, in-process rewards, recovery, checkpoint stalls", mainOf(durability.Main)},
	{"hostile", "[flags]", "an honest client's answers and latency while hostile clients attack", mainOf(hostile.Main)},
	{"madd", "[flags]", "memories added per second over the protocol: MEM.MADD against pipelined MEM.ADD", mainOf(madd.Main)},
	{"filter", "[flags]", "filtered phase-1 recall and QPS by tenant size, against post-filtering", mainOf(filter.Main)},
	{"loop", "[flags]", "the learning loop: success per epoch by λ, Q calibration, forgetting, through the server", mainOf(loop.Main)},
	{"serverann", "[flags]", "a collection filled over the protocol: MEM.RETRIEVE recall and latency during a retrain, idle, after a restart, against in process", mainOf(serverann.Main)},
	{"cluster", "[flags]", "acknowledged rewards/s and p99 of one node against a 3-node raft group; failover time", mainOf(cluster.Main)},
	{"maintain", "[flags]", "disk, recall and QPS before and after pruning half, compaction (writers' p99 during it), snapshot and rollback", mainOf(maintain.Main)},
}

// mainOf adapts a benchmark package's Main to a sub-command: it writes its
// report to stdout.
func mainOf(m func(args []string, out io.Writer) error) func([]string) error {
	return func(args []string) error { return m(args, os.Stdout) }
}

// benchUsage is memrl bench --help's text.
func benchUsage() string {
	return "usage:\n" + columns(usageRows("memrl bench", benchCommands)) +
		"memrl bench NAME --help lists a benchmark's flags.\n"
}

func bench(args []string) error {
	if len(args) == 0 {
		return cliflag.Usagef("which benchmark?\n%s", benchUsage())
	}
	switch args[0] {
	case "-h", "-help", "--help":
		fmt.Print(benchUsage())
		return nil
	}
	if b, ok := lookup(benchCommands, args[0]); ok {
		return b.run(args[1:])
	}
	return cliflag.Usagef("unknown benchmark %q\n%s", args[0], benchUsage())
}
