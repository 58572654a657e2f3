//go:build linux

package serverann

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// pinProcess binds every thread of this process (and, by inheritance, the
// threads it starts later) to the CPUs listed in cpus ("1", "0-1,3": the
// taskset -c form) and returns a function that restores the mask it found.
// The benchmark pins its clients away from the server's CPUs so that, on a
// machine of two cores, what the server's CPU time per query measures is
// the server, not its switches with the load generator.
func pinProcess(cpus string) (restore func() error, err error) {
	var set, old unix.CPUSet
	if err := parseCPUList(cpus, &set); err != nil {
		return nil, err
	}
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		return nil, err
	}
	apply := func(s *unix.CPUSet) error {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil {
				continue
			}
			// A thread that exited since the listing is no error.
			if err := unix.SchedSetaffinity(tid, s); err != nil && err != unix.ESRCH {
				return fmt.Errorf("pinning thread %d to CPUs %s: %w", tid, cpus, err)
			}
		}
		return nil
	}
	if err := apply(&set); err != nil {
		apply(&old)
		return nil, err
	}
	return func() error { return apply(&old) }, nil
}

// parseCPUList reads a CPU list such as "0-1,3" into set.
func parseCPUList(s string, set *unix.CPUSet) error {
	set.Zero()
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 0 || b < a || b >= 1024 {
			return fmt.Errorf("CPU list %q: want numbers and ranges such as 0-1,3", s)
		}
		for c := a; c <= b; c++ {
			set.Set(c)
		}
	}
	return nil
}
