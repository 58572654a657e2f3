package engine

import "time"

// pacer keeps a long background task (a checkpoint's copy and encoding, an
// index build on a single processor: buildPace) from holding a core: after every busySlice of work it sleeps half as
// long (in practice a sleep is rarely shorter than a few hundred
// microseconds). On a machine with few cores a task that never blocks
// would otherwise delay the WAL's flusher, which every writer waits for, by
// up to the scheduler's 10 ms time slice at each wake-up; with 2 ms slices
// writers still waited about 2.4 ms at p99 during a checkpoint, with
// 500 µs slices about 1.5 ms. A checkpoint of a million memories is bound by
// its I/O and took as long either way.
type pacer struct {
	start time.Time
}

const busySlice = 500 * time.Microsecond

func newPacer() *pacer { return &pacer{start: time.Now()} }

// step is called between units of work.
func (p *pacer) step() {
	if d := time.Since(p.start); d > busySlice {
		time.Sleep(d / 2)
		p.start = time.Now()
	}
}
