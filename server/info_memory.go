package server

import (
	"bytes"
	"os"
	"runtime/metrics"
	"strconv"
)

// memorySamples are the runtime/metrics INFO memory reports. Reading them
// does not stop the world (runtime.ReadMemStats does).
var memorySamples = []string{
	"/memory/classes/heap/objects:bytes", // used_memory
	"/memory/classes/total:bytes",        // go_sys_bytes
	"/gc/heap/goal:bytes",
	"/gc/cycles/total:gc-cycles",
	"/sched/goroutines:goroutines",
}

// goMemory is what INFO memory and the Prometheus metrics report of the Go
// runtime.
type goMemory struct {
	heapObjects uint64 // bytes of heap objects, live or not yet swept
	total       uint64 // bytes the runtime has mapped, all classes
	heapGoal    uint64
	gcCycles    uint64
	goroutines  uint64
}

func readGoMemory() goMemory {
	samples := make([]metrics.Sample, len(memorySamples))
	for i, n := range memorySamples {
		samples[i].Name = n
	}
	metrics.Read(samples)
	v := func(i int) uint64 {
		if samples[i].Value.Kind() != metrics.KindUint64 {
			return 0 // not supported by this Go version
		}
		return samples[i].Value.Uint64()
	}
	return goMemory{heapObjects: v(0), total: v(1), heapGoal: v(2), gcCycles: v(3), goroutines: v(4)}
}

// residentBytes returns the process's resident set size from
// /proc/self/statm, or 0 where there is no such file.
func residentBytes() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseUint(string(f[1]), 10, 64)
	if err != nil {
		return 0
	}
	return pages * uint64(os.Getpagesize())
}

// memoryInfo is the server's part of INFO memory; RegisterMem adds the
// bytes of the engine's mapped files.
func memoryInfo() [][2]string {
	m := readGoMemory()
	rss := residentBytes()
	return [][2]string{
		{"used_memory", strconv.FormatUint(m.heapObjects, 10)},
		{"used_memory_human", bytesHuman(m.heapObjects)},
		{"used_memory_rss", strconv.FormatUint(rss, 10)},
		{"used_memory_rss_human", bytesHuman(rss)},
		{"go_sys_bytes", strconv.FormatUint(m.total, 10)},
		{"go_heap_goal_bytes", strconv.FormatUint(m.heapGoal, 10)},
		{"go_gc_cycles", strconv.FormatUint(m.gcCycles, 10)},
		{"go_goroutines", strconv.FormatUint(m.goroutines, 10)},
	}
}

// bytesHuman formats n like Redis's *_human fields: "1023B", "1.50K",
// "12.00M", "1.25G".
func bytesHuman(n uint64) string {
	const units = "KMGTP"
	if n < 1024 {
		return strconv.FormatUint(n, 10) + "B"
	}
	f := float64(n)
	i := -1
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	return strconv.FormatFloat(f, 'f', 2, 64) + units[i:i+1]
}
