package engine

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/memrl/memrl/vfs"
)

// The checkpoint that commits a compaction is written under the
// collection's read lock: rewards (logged by id, as results) go on during
// it, and writers wait at writeGate until it is done. These tests crash at
// every file operation from the checkpoint's start on, with a reward
// acknowledged during it and an add waiting for it.

const commitCrashAddID = 300

// commitCrashRun runs maintSetup and a compaction on db (over fs) whose
// checkpoint, as it starts, rewards memory rewardID and starts an add of
// commitCrashAddID (which waits for the checkpoint). It returns whether
// the reward and the add were acknowledged, and the file operations made
// when the checkpoint started.
func commitCrashRun(t *testing.T, db *DB, fs *vfs.MemFS) (rewarded, added bool, at int64) {
	t.Helper()
	c, _, after := maintSetup(t, db)
	var rewardID uint64
	for id := range after {
		rewardID = max(rewardID, id)
	}
	addRes := make(chan error, 1)
	var rerr error
	started := false
	compactCheckpointing = func(uint64) {
		if started {
			return
		}
		started = true
		at = fs.MutatingOps()
		_, rerr = c.Reward(1, []uint64{rewardID}, nil)
		go func() {
			_, err := c.Add(AddRequest{Vector: []float32{0.5, 0.5, 0.5, 0.5}, ID: commitCrashAddID, HasID: true})
			addRes <- err
		}()
	}
	defer func() { compactCheckpointing = nil }()
	_, cerr := c.Compact()
	if !started {
		if !fs.PoweredOff() {
			t.Fatalf("the compaction never reached its checkpoint: %v", cerr)
		}
		return false, false, 0
	}
	aerr := <-addRes
	if !fs.PoweredOff() && (cerr != nil || rerr != nil || aerr != nil) {
		t.Fatalf("without a power-off: compaction %v, reward %v, add %v", cerr, rerr, aerr)
	}
	return rerr == nil, aerr == nil, at
}

// TestCrashDuringCompactionCommit: a reward acknowledged during the
// checkpoint that commits a compaction, and an add that waited for it,
// survive a crash at any file operation after them; recovery holds
// exactly the state without the crash, less what was not acknowledged.
func TestCrashDuringCompactionCommit(t *testing.T) {
	old := compactChunk
	compactChunk = 8
	defer func() { compactChunk = old }()

	fs := vfs.NewMemFS()
	db, err := Open("/db", crashOpts(fs))
	if err != nil {
		t.Fatal(err)
	}
	fs.PowerOffAt(0)
	_, _, at := commitCrashRun(t, db, fs)
	ops := fs.MutatingOps()
	c, _ := db.Collection("m")
	want := collState(t, c)
	if _, ok := want[commitCrashAddID]; !ok {
		t.Fatal("the add made during the compaction is missing")
	}
	db.Close()

	step := max((ops-at)/60, 1)
	if testing.Short() {
		step = max((ops-at)/8, 1)
	}
	points := 0
	for k := at + 1; k <= ops+1; k += step {
		for _, mode := range []vfs.CrashMode{vfs.DropUnsynced, vfs.KeepRandomPrefix, vfs.TearLastSector} {
			fs := vfs.NewMemFS()
			db, err := Open("/db", crashOpts(fs))
			if err != nil {
				t.Fatal(err)
			}
			fs.PowerOffAt(k)
			rewarded, added, _ := commitCrashRun(t, db, fs)
			db.Close()
			what := fmt.Sprintf("power off at op %d (checkpoint from %d to %d), %v, reward acked %v, add acked %v", k, at, ops, mode, rewarded, added)
			crashed := fs.Crash(mode, rand.New(rand.NewSource(k)))
			db2, err := Open("/db", crashOpts(crashed))
			if err != nil {
				t.Fatalf("%s: recovery: %v", what, err)
			}
			c2, err := db2.Collection("m")
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			got, exp := collState(t, c2), map[uint64]memState{}
			for id, m := range want {
				exp[id] = m
			}
			var rewardID uint64
			for id := range exp {
				if id != commitCrashAddID {
					rewardID = max(rewardID, id)
				}
			}
			if !rewarded { // in flight: either is right
				exp[rewardID] = got[rewardID]
			}
			if !added {
				delete(exp, commitCrashAddID)
				delete(got, commitCrashAddID)
			}
			if d := diffState(exp, got); d != "" {
				db2.Close()
				t.Fatalf("%s: recovered state: %s", what, d)
			}
			if err := db2.Close(); err != nil {
				t.Fatalf("%s: close: %v", what, err)
			}
			points++
		}
	}
	t.Logf("checkpoint at file operations %d-%d; %d crash points", at, ops, points)
}
