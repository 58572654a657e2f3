package ann

import "golang.org/x/sys/unix"

// threadCPU returns the calling thread's CPU time in nanoseconds
// (CLOCK_THREAD_CPUTIME_ID), or 0 if the clock cannot be read. The sweep
// locks its goroutine to its thread, so differences of this clock are the
// search's own CPU time: on a machine shared with other work, wall-clock
// QPS moves with the load while this stays put (it still sees cache
// contention), so settings can be compared at any load.
func threadCPU() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return ts.Nano()
}

// processCPU returns this process's CPU time (user and system, every
// thread) in nanoseconds (getrusage RUSAGE_SELF), or 0 if it cannot be
// read: a batched sweep runs on several threads, so its CPU time is the
// process's over the sweep.
func processCPU() int64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
