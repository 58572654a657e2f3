package main

import (
	"context"
	"log/slog"
	"math"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/memrl/memrl/server"
)

// The heap governor.
//
// --maxmemory bounds the bytes clients make the server buffer (the
// server's Budget), but not the garbage they leave: a buffer that grew by
// copying, a request refused half-way, a payload sent. Go collects garbage
// when the heap has grown by GOGC (100%) since the last collection, so with
// a gigabyte of live client buffers the heap could reach two gigabytes
// and more before a collection (40 stalled 50 MB uploads took RSS to 2.7
// GB with a 1 GiB budget). The governor sets Go's soft memory limit
// (debug.SetMemoryLimit) to what the rest of the process holds live plus
// --maxmemory and a quarter of it, every half second, so garbage is
// collected before the heap passes that. It never limits the database
// itself: the limit follows its live heap up. (Go's collector spends at
// most about half the CPU when a limit presses it, so a limit that is
// too tight slows the server rather than stopping it.)

// heapSlack is added to the limit for runtime overheads and rounding.
const heapSlack = 64 << 20

// governHeap runs until ctx ends, then restores the limit it found.
func governHeap(ctx context.Context, budget *server.Budget, maxMemory int64, logger *slog.Logger) {
	if maxMemory <= 0 {
		return // unlimited client memory: nothing to govern
	}
	old := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(old)
	// An operator's own limit (GOMEMLIMIT) is a ceiling the governor
	// never raises.
	ceiling := old
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		metrics.Read(live)
		debug.SetMemoryLimit(min(ceiling, heapLimit(live[0].Value.Uint64(), budget.Used(), maxMemory)))
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// heapLimit is the soft memory limit for a live heap of live bytes, of
// which clientUsed are client buffers, with clients allowed maxMemory.
func heapLimit(live uint64, clientUsed, maxMemory int64) int64 {
	rest := int64(min(live, math.MaxInt64/4))
	rest -= min(rest, clientUsed) // the database and the server's own state
	return rest + maxMemory + maxMemory/4 + heapSlack
}
