package engine

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/memrl/memrl/vfs"
)

// The checkpoint that commits a compaction is written after its remap
// marker (remap.go), while rewards (logged by id, as results) and writers
// (logged against the new rows) go on. These tests crash at every file
// operation from the checkpoint's start on (the removal of the old files
// included), with a reward acknowledged during it and an add made during
// it: recovery before the checkpoint's commit replays the marker.

const commitCrashAddID = 300

// commitAcks says which of commitCrashRun's writes were acknowledged.
type commitAcks struct {
	rewarded, added, payloaded, deleted bool
	rewardID, payID, delID              uint64
}

// commitCrashRun runs maintSetup and a compaction on db (over fs) whose
// checkpoint, as it starts, rewards memory rewardID (the largest id left)
// and starts, one after the other, an add of commitCrashAddID, a payload
// update of payID and a delete of delID (the two smallest), which run
// during the checkpoint. It returns which were acknowledged, and the file
// operations made when the checkpoint started.
func commitCrashRun(t *testing.T, db *DB, fs *vfs.MemFS) (acks commitAcks, at int64) {
	t.Helper()
	c, _, after := maintSetup(t, db)
	ids := make([]uint64, 0, len(after))
	for id := range after {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	acks.rewardID, acks.payID, acks.delID = ids[len(ids)-1], ids[0], ids[1]
	writes := make(chan error, 1)
	var rerr error
	started := false
	compactCheckpointing = func(uint64) {
		if started {
			return
		}
		started = true
		at = fs.MutatingOps()
		_, rerr = c.Reward(1, []uint64{acks.rewardID}, nil)
		go func() {
			_, err := c.Add(AddRequest{Vector: []float32{0.5, 0.5, 0.5, 0.5}, ID: commitCrashAddID, HasID: true})
			if acks.added = err == nil; err == nil {
				err = c.SetPayload(ByID(acks.payID), []byte("set during the checkpoint"))
				if acks.payloaded = err == nil; err == nil {
					_, err = c.Delete([]uint64{acks.delID})
					acks.deleted = err == nil
				}
			}
			writes <- err
		}()
	}
	defer func() { compactCheckpointing = nil }()
	_, cerr := c.Compact()
	if !started {
		if !fs.PoweredOff() {
			t.Fatalf("the compaction never reached its checkpoint: %v", cerr)
		}
		return acks, 0
	}
	werr := <-writes
	if !fs.PoweredOff() && (cerr != nil || rerr != nil || werr != nil) {
		t.Fatalf("without a power-off: compaction %v, reward %v, writes %v", cerr, rerr, werr)
	}
	acks.rewarded = rerr == nil
	return acks, at
}

// TestCrashDuringCompactionCommit: a reward acknowledged during the
// checkpoint that commits a compaction, and an add made during it,
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
	acks0, at := commitCrashRun(t, db, fs)
	ops := fs.MutatingOps()
	c, _ := db.Collection("m")
	want := collState(t, c)
	if _, ok := want[commitCrashAddID]; !ok {
		t.Fatal("the add made during the compaction is missing")
	}
	if _, ok := want[acks0.delID]; ok {
		t.Fatal("the delete made during the compaction is missing")
	}
	db.Close()

	step := max((ops-at)/60, 1)
	if shortSweep() { // sweep_test.go
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
			acks, _ := commitCrashRun(t, db, fs)
			db.Close()
			what := fmt.Sprintf("power off at op %d (checkpoint from %d to %d), %v, acked %+v", k, at, ops, mode, acks)
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
			// Writes not acknowledged were in flight (or never made):
			// either state is right for them.
			if !acks.rewarded {
				exp[acks.rewardID] = got[acks.rewardID]
			}
			if !acks.added {
				delete(exp, commitCrashAddID)
				delete(got, commitCrashAddID)
			}
			if !acks.payloaded {
				exp[acks.payID] = got[acks.payID]
			}
			if !acks.deleted {
				if m, ok := got[acks.delID]; ok {
					exp[acks.delID] = m
				}
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
