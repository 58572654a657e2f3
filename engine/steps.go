package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
)

// Long reads in bounded steps.
//
// A read that examines many memories (a filtered count, a filtered scan
// page, the evaluation of an expensive filter for a retrieval) must not
// hold the collection's read lock for its whole length: an add or delete
// waiting for the lock would wait that long, and every read arriving
// after the waiting writer would queue behind it (sync.RWMutex admits no
// new reader while a writer waits). A filter of a few KiB costs some
// microseconds a memory, seconds over a few hundred thousand memories.
//
// Such a read works in steps instead. A step holds the read lock for
// about stepTime (the clock is read every stepCheck rows, so a step is
// stepTime plus at most stepCheck rows' work), then releases it, checks
// the read's context, and takes it again: a waiting writer goes in
// between, so a writer waits for at most the step in progress of each
// reader, whatever the length of the reads. A read that fits in one step
// (every read of a small collection, every retrieval through the IVF
// index without an expensive filter) takes the lock once, as before.
//
// What a stepped read sees of the writes that land between its steps is
// stated by each: in short, a memory live and unchanged for the whole
// read is seen exactly once, as it is; a memory added, deleted or changed
// during the read may or may not be, but never half-changed (each memory
// is read whole within a step, under the lock).

// defaultStepTime is how long one step holds the collection's read lock:
// short next to the 50 ms an add may wait while filter hogs run (issue
// 26), long next to the cost of releasing and taking the lock (well
// under a microsecond uncontended).
const defaultStepTime = 2 * time.Millisecond

// stepCheck is how many rows a step examines between two readings of the
// clock: a reading costs some tens of nanoseconds, a row's filter at
// least as much. A power of two.
const stepCheck = 64

// defaultStepCheckValues is how many vector values an unfiltered exact
// scan scores between two readings of the clock: some microseconds of
// work, next to which a reading costs under 1%, whatever the dimension.
const defaultStepCheckValues = 16 << 10

// stepCheckValues is defaultStepCheckValues; tests lower it, with
// stepTimeNanos, to make a scan of a small collection take many steps.
var stepCheckValues atomic.Int64

// stepTimeNanos is the step length in nanoseconds; tests shorten it to
// make small collections take many steps (the results must not change).
var stepTimeNanos atomic.Int64

func init() {
	stepTimeNanos.Store(int64(defaultStepTime))
	stepCheckValues.Store(defaultStepCheckValues)
}

// yieldHook, when set (by tests only), is called by every yieldLocked
// between the release of the lock and its retaking: a test can hold a
// stepped read there, in the middle, and write meanwhile.
var yieldHook atomic.Pointer[func()]

// errRenumbered is returned by a stepped iteration over rows when a
// compaction renumbered the rows between two steps: the caller restarts
// (compactions are minutes apart; a restart at most doubles a read).
var errRenumbered = errors.New("engine: rows renumbered between steps")

// stepper paces one stepped read of collection c.
type stepper struct {
	c     *Collection
	ctx   context.Context
	start time.Time     // when the step in progress took the lock
	limit time.Duration // step length
	n     int           // rows examined in the step in progress
	steps int           // steps completed
}

// newStepper starts the first step of a read of c.
// REQUIRES: c.mu held for reading (the first step has begun).
func newStepper(ctx context.Context, c *Collection) stepper {
	return stepper{c: c, ctx: ctx, start: time.Now(), limit: time.Duration(stepTimeNanos.Load())}
}

// over counts one row examined and reports whether the step has lasted
// its time: the caller then stops before that row, and resumes from it
// after yieldLocked.
func (s *stepper) over() bool {
	s.n++
	if s.n&(stepCheck-1) != 0 {
		return false
	}
	return time.Since(s.start) >= s.limit
}

// due reports whether the step has lasted its time, for a caller that
// counts its work in batches rather than rows.
func (s *stepper) due() bool { return time.Since(s.start) >= s.limit }

// yieldLocked ends the step in progress: it releases c's read lock, lets
// a waiting writer in, and takes the lock again for the next step, unless
// the read's context is done (its error is returned, wrapped) or the
// collection was dropped meanwhile. On an error the lock is not held.
// REQUIRES: c.mu held for reading.
func (s *stepper) yieldLocked() error {
	s.c.mu.RUnlock()
	s.steps++
	if h := yieldHook.Load(); h != nil {
		(*h)() // tests: between two steps, with the lock released
	}
	// Give the processor away too: on a machine whose cores are all busy
	// with long reads, the goroutines a write needs (the connection's,
	// the log's) would otherwise wait for the reads' preemption, every
	// 10 ms or so, at each hand-off.
	runtime.Gosched()
	if err := s.ctx.Err(); err != nil {
		return ctxStopped(s.c, err)
	}
	if err := s.c.rlockLive(); err != nil {
		return err
	}
	s.start, s.n = time.Now(), 0
	return nil
}

// ctxStopped wraps the error of a read's context, which ended the read:
// errors.Is(err, context.Canceled) or context.DeadlineExceeded holds.
func ctxStopped(c *Collection, err error) error {
	return fmt.Errorf("engine: collection %q: read stopped: %w", c.name, err)
}

// checkCtx returns ctxStopped's error when ctx is done already, so that a
// read whose deadline has passed or whose client has gone does not start.
func checkCtx(c *Collection, ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return ctxStopped(c, err)
	}
	return nil
}
