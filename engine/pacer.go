package engine

import "time"

// pacer keeps a long background task (a checkpoint's copy and encoding)
// from holding a core: after every busySlice of work it sleeps half as
// long. On a machine with few cores a task that never blocks would
// otherwise delay the WAL's flusher, which every writer waits for, by up to
// the scheduler's 10 ms time slice at each wake-up. Costs the task a third
// of its speed; buys writers their latency.
type pacer struct {
	start time.Time
}

const busySlice = 2 * time.Millisecond

func newPacer() *pacer { return &pacer{start: time.Now()} }

// step is called between units of work.
func (p *pacer) step() {
	if d := time.Since(p.start); d > busySlice {
		time.Sleep(d / 2)
		p.start = time.Now()
	}
}
