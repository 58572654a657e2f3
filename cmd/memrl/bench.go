package main

import (
	"fmt"
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

const benchUsage = `usage:
  memrl bench ann [flags]          recall against latency of the phase-1 index
  memrl bench rewards [flags]      acknowledged rewards per second over the protocol
  memrl bench durability [flags]   fsync latency, in-process rewards, recovery, checkpoint stalls
  memrl bench hostile [flags]      an honest client's answers and latency while hostile clients attack
  memrl bench madd [flags]         memories added per second over the protocol: MEM.MADD against pipelined MEM.ADD
  memrl bench filter [flags]       filtered phase-1 recall and QPS by tenant size, against post-filtering
  memrl bench loop [flags]         the learning loop: success per epoch by λ, Q calibration, forgetting, through the server
  memrl bench serverann [flags]    a collection filled over the protocol: MEM.RETRIEVE recall and latency during a retrain, idle, after a restart, against in process
  memrl bench cluster [flags]      acknowledged rewards/s and p99 of one node against a 3-node raft group; failover time
  memrl bench maintain [flags]     disk, recall and QPS before and after pruning half, compaction (writers' p99 during it), snapshot and rollback
memrl bench NAME --help lists a benchmark's flags.
`

func bench(args []string) error {
	if len(args) == 0 {
		return cliflag.Usagef("which benchmark?\n%s", benchUsage)
	}
	switch args[0] {
	case "-h", "-help", "--help":
		fmt.Print(benchUsage)
		return nil
	case "rewards":
		return rewards.Main(args[1:], os.Stdout)
	case "durability":
		return durability.Main(args[1:], os.Stdout)
	case "ann":
		return benchANN(args[1:])
	case "hostile":
		return hostile.Main(args[1:], os.Stdout)
	case "madd":
		return madd.Main(args[1:], os.Stdout)
	case "filter":
		return filter.Main(args[1:], os.Stdout)
	case "loop":
		return loop.Main(args[1:], os.Stdout)
	case "serverann":
		return serverann.Main(args[1:], os.Stdout)
	case "cluster":
		return cluster.Main(args[1:], os.Stdout)
	case "maintain":
		return maintain.Main(args[1:], os.Stdout)
	}
	return cliflag.Usagef("unknown benchmark %q\n%s", args[0], benchUsage)
}
