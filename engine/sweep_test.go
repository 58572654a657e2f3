package engine

import "testing"

// The engine's test time under the race detector (CI runs every package
// under it, and this one is the longest: 430 s in CI on 2 cores, 711 s on
// a loaded machine).
//
// Sweeps. A crash sweep repeats one workload and one recovery at every
// point it cuts the power: the same goroutines, in the same order, at
// each point. Its cost is single-threaded work, which the race detector
// slows about threefold (the four sweeps here took 107 s of engine's
// 711 s under -race on a loaded machine, 35 s without it), while the
// races it could find are those of its goroutines, which the first
// points already run. So under -race it checks the points -short does, and
// `scripts/test.sh --race` (CI) runs it once more without the detector,
// whole: CI keeps both the detector's view of its goroutines and every
// crash point. scripts/test.sh finds these tests by their call of
// shortSweep, which must therefore be in the test's own function, not in
// a helper.
//
// Not parallel. t.Parallel on the longest tests (the filtered and SIFT
// recall tests, the index restarts, the sweeps) saved nothing: under
// -race on a loaded 2-core machine the parallel part took 321 s for
// about 290 s of work run one at a time, since their index builds and
// searches already use both cores (docs/TESTING.md, "CI's time").

// shortSweep reports whether a sweep checks fewer points: under -short,
// or under the race detector (above) unless MEMRL_CRASH_LONG asks for
// every point.
func shortSweep() bool { return testing.Short() || raceEnabled && !crashLong() }
