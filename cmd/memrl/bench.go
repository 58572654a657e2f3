package main

import (
	"fmt"
	"os"

	"github.com/memrl/memrl/bench/durability"
	"github.com/memrl/memrl/bench/hostile"
	"github.com/memrl/memrl/bench/rewards"
)

func bench(args []string) error {
	if len(args) < 1 {
		return fmt.Errorf("bench: which one? ann, rewards, durability or hostile")
	}
	switch args[0] {
	case "rewards":
		return rewards.Main(args[1:], os.Stdout)
	case "durability":
		return durability.Main(args[1:], os.Stdout)
	case "ann":
		return benchANN(args[1:])
	case "hostile":
		return hostile.Main(args[1:], os.Stdout)
	}
	return fmt.Errorf("bench: unknown benchmark %q (want ann, rewards, durability or hostile)", args[0])
}
