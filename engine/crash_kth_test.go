package engine

import (
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/memrl/memrl/vfs"
	"github.com/memrl/memrl/wal"
)

// Crash tests of the whole engine over vfs.MemFS: a fixed workload (create,
// add, reward, delete, re-add, drop, checkpoint) is crashed at a chosen file
// operation (MemFS.PowerOffAt), the disk is crashed in each CrashMode, the
// database is recovered and compared with the oracle (crash_model_test.go).
//
// In CI the crash points are spread over the workload (about crashPoints of
// them per mode); MEMRL_CRASH_LONG=1 crashes at every operation and runs
// more random seeds. A failure names the seed, the crash point and the mode,
// and MEMRL_CRASH_SEED=<seed> replays a random-seed run.

const crashSteps = 320 // workload operations

func crashLong() bool { return os.Getenv("MEMRL_CRASH_LONG") != "" }

func crashOpts(fs *vfs.MemFS) Options {
	return Options{FS: fs, Sync: wal.SyncAlways, SegmentSize: 2048,
		CheckpointInterval: -1, CheckpointBytes: -1, Logf: func(string, ...any) {},
		Now: crashNow}
}

// crashNow is the crash workloads' clock: it stands still, so the expiries
// the workload sets are exact values the model knows, and nothing expires
// under it.
func crashNow() time.Time { return time.Unix(1_800_000_000, 0) }

// runWorkload runs steps operations of the workload of seed on db and
// returns the acknowledged model, the in-flight model (nil if every
// operation succeeded) and the failing operation.
func runWorkload(db *DB, seed int64, steps int) (acked, inflight model, failed *op) {
	g := newGen(seed)
	acked = model{}
	for i := 0; i < steps; i++ {
		o := g.next(acked)
		next := acked.clone()
		next.apply(o)
		if err := execOp(db, o); err != nil {
			return acked, next, &o
		}
		acked = next
	}
	return acked, nil, nil
}

// crashOnce runs the workload of seed on a fresh MemFS that loses power at
// mutating operation k, crashes it in mode, recovers and checks. It returns
// the number of mutating operations the workload attempted.
func crashOnce(t *testing.T, seed, k int64, mode vfs.CrashMode, steps int, reopen bool) int64 {
	t.Helper()
	fs := vfs.NewMemFS()
	fs.PowerOffAt(k)
	db, err := Open("/db", crashOpts(fs))
	if err != nil {
		if fs.PoweredOff() {
			return fs.MutatingOps() // the power went out inside Open: nothing acknowledged
		}
		t.Fatalf("seed %d k %d: Open: %v", seed, k, err)
	}
	acked, inflight, failed := runWorkload(db, seed, steps)
	if failed != nil && !fs.PoweredOff() {
		t.Fatalf("seed %d k %d: %v failed before the power-off", seed, k, failed)
	}
	db.Close() // fails (the disk is gone); stops the background goroutines
	ops := fs.MutatingOps()

	crashed := fs.Crash(mode, rand.New(rand.NewSource(seed^k<<8^int64(mode))))
	what := fmt.Sprintf("seed %d, power off at op %d of %d, %v, in flight: %v", seed, k, ops, mode, failed)
	db2, err := Open("/db", crashOpts(crashed))
	if err != nil {
		t.Fatalf("%s: recovery failed: %v", what, err)
	}
	if err := checkRecovered(db2, acked, inflight); err != nil {
		db2.Close()
		t.Fatalf("%s: %v", what, err)
	}
	if reopen {
		// The recovered database takes writes, checkpoints on Close and
		// opens again to the same state.
		post := []op{{kind: opCreate, coll: "post"},
			{kind: opAdd, coll: "post", id: 1, vec: []float32{1, 2, 3, 4}, payload: []byte("p"), q: 1},
			{kind: opReward, coll: "post", ids: []uint64{1}, q: 3}}
		for _, o := range post {
			if err := execOp(db2, o); err != nil {
				t.Fatalf("%s: %v after recovery: %v", what, o, err)
			}
			acked.apply(o)
			if inflight != nil {
				inflight.apply(o)
			}
		}
		if err := db2.Close(); err != nil {
			t.Fatalf("%s: Close after recovery: %v", what, err)
		}
		db3, err := Open("/db", crashOpts(crashed))
		if err != nil {
			t.Fatalf("%s: reopen after recovery: %v", what, err)
		}
		if err := checkRecovered(db3, acked, inflight); err != nil {
			// db3 must hold the same choice db2 made; checking against
			// both models again is the oracle's weaker form of that.
			t.Fatalf("%s: after reopen: %v", what, err)
		}
		db3.Close()
		return ops
	}
	db2.Close()
	return ops
}

// workloadOps runs the workload of seed without a crash and returns how many
// mutating file operations it makes, after checking the result (a clean
// Close and reopen must give exactly the model).
func workloadOps(t *testing.T, seed int64, steps int) int64 {
	t.Helper()
	fs := vfs.NewMemFS()
	db, err := Open("/db", crashOpts(fs))
	if err != nil {
		t.Fatal(err)
	}
	acked, _, failed := runWorkload(db, seed, steps)
	if failed != nil {
		t.Fatalf("seed %d: %v failed without a crash", seed, failed)
	}
	ops := fs.MutatingOps()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db2, err := Open("/db", crashOpts(fs.Crash(vfs.DropUnsynced, rand.New(rand.NewSource(seed)))))
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	if err := checkRecovered(db2, acked, nil); err != nil {
		t.Fatalf("seed %d, clean close: %v", seed, err)
	}
	return ops
}

// TestCrashAtEveryKthOperation crashes the fixed workload at every k-th
// mutating file operation, in every crash mode.
func TestCrashAtEveryKthOperation(t *testing.T) {
	const seed = 20261130
	total := workloadOps(t, seed, crashSteps)
	step := max(total/150, 1)
	if crashLong() {
		step = 1
	}
	if shortSweep() { // sweep_test.go
		step = max(total/10, 1)
	}
	start := time.Now()
	points := 0
	for k := int64(1); k <= total+1; k += step {
		for _, mode := range []vfs.CrashMode{vfs.DropUnsynced, vfs.KeepRandomPrefix, vfs.TearLastSector} {
			crashOnce(t, seed, k, mode, crashSteps, k%(7*step) == 1)
			points++
		}
	}
	t.Logf("workload of %d operations makes %d file operations; %d crash points checked in %v",
		crashSteps, total, points, time.Since(start).Round(time.Millisecond))
}

// TestCrashRandomSeeds runs random workloads crashed at a random operation.
// The seed is printed on failure; MEMRL_CRASH_SEED replays one.
func TestCrashRandomSeeds(t *testing.T) {
	runs := 40
	if crashLong() {
		runs = 2000
	}
	base := time.Now().UnixNano()
	if s := os.Getenv("MEMRL_CRASH_SEED"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		base, runs = v, 1
	}
	for i := 0; i < runs; i++ {
		seed := base + int64(i)
		rng := rand.New(rand.NewSource(seed))
		steps := 20 + rng.Intn(crashSteps)
		total := workloadOps(t, seed, steps)
		k := 1 + rng.Int63n(total+1)
		mode := vfs.CrashMode(rng.Intn(3))
		t.Run("", func(t *testing.T) {
			defer func() {
				if t.Failed() {
					t.Logf("replay with MEMRL_CRASH_SEED=%d go test ./engine -run TestCrashRandomSeeds", seed)
				}
			}()
			crashOnce(t, seed, k, mode, steps, rng.Intn(4) == 0)
		})
	}
}
