package engine

import (
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/memrl/memrl/vfs"
)

// Crash tests of snapshots and rollback: a fixed workload of adds, rewards,
// deletes, prunes, snapshots, rollbacks, snapshot deletes and checkpoints
// is crashed at every k-th mutating file operation (MemFS.PowerOffAt), in
// every crash mode; the recovered collection must show exactly the state
// after the last acknowledged operation, or after the one in flight: a
// rollback or snapshot is never half there. Then every snapshot listed
// must still roll back to the state recorded when it was taken.

type snapCrashOp struct {
	kind string // add, reward, del, prune, snap, rollback, delsnap, ckpt
	id   uint64
	name string
	r    float64
}

func snapCrashWorkload() []snapCrashOp {
	rng := rand.New(rand.NewSource(7))
	var ops []snapCrashOp
	id := uint64(0)
	add := func(n int) {
		for range n {
			id++
			ops = append(ops, snapCrashOp{kind: "add", id: id})
		}
	}
	rewards := func(n int) {
		for range n {
			ops = append(ops, snapCrashOp{kind: "reward", id: 1 + uint64(rng.Intn(int(id))), r: rng.Float64()*2 - 1})
		}
	}
	add(12)
	rewards(6)
	ops = append(ops, snapCrashOp{kind: "snap", name: "s1"})
	ops = append(ops, snapCrashOp{kind: "del", id: 2}, snapCrashOp{kind: "del", id: 5}, snapCrashOp{kind: "prune", r: -0.2})
	add(4)
	rewards(6)
	ops = append(ops, snapCrashOp{kind: "ckpt"}, snapCrashOp{kind: "snap", name: "s2"})
	ops = append(ops, snapCrashOp{kind: "del", id: 7})
	rewards(3)
	ops = append(ops, snapCrashOp{kind: "rollback", name: "s1"})
	rewards(4)
	ops = append(ops, snapCrashOp{kind: "del", id: 1}, snapCrashOp{kind: "rollback", name: "s2"})
	ops = append(ops, snapCrashOp{kind: "ckpt"}, snapCrashOp{kind: "delsnap", name: "s1"})
	add(3)
	ops = append(ops, snapCrashOp{kind: "rollback", name: "s2"}, snapCrashOp{kind: "snap", name: "s3"})
	ops = append(ops, snapCrashOp{kind: "del", id: 3})
	ops = append(ops, snapCrashOp{kind: "delsnap", name: "s2"}, snapCrashOp{kind: "rollback", name: "s3"})
	return ops
}

func execSnapCrashOp(db *DB, o snapCrashOp) error {
	if o.kind == "ckpt" {
		return db.Checkpoint()
	}
	c, err := db.Collection("c")
	if err != nil {
		return err
	}
	switch o.kind {
	case "add":
		req := AddRequest{Vector: []float32{1, float32(o.id), 0, 0}, Payload: []byte(fmt.Sprint("p", o.id)),
			ID: o.id, HasID: true, Attrs: []byte(fmt.Sprintf(`{"g":%d}`, o.id%3))}
		if o.id%3 == 0 {
			req.Key = fmt.Sprint("k", o.id)
		}
		_, err = c.Add(req)
	case "reward":
		_, err = c.Reward(o.r, []uint64{o.id}, nil)
		if err != nil && !errorsIsNoMemory(err) {
			return err
		}
		return nil
	case "del":
		_, err = c.Delete([]uint64{o.id})
	case "prune":
		var t Ticket
		if _, t, err = c.Prune(PruneOptions{HasQBelow: true, QBelow: o.r}); err == nil && t != 0 {
			err = db.WaitDurable(t)
		}
	case "snap":
		err = c.Snapshot(o.name)
	case "rollback":
		_, err = c.Rollback(o.name)
	case "delsnap":
		_, err = c.DeleteSnapshot(o.name)
	}
	return err
}

func errorsIsNoMemory(err error) bool { return errors.Is(err, ErrNoMemory) }

// snapCrashState is what the oracle compares: the memories and the
// snapshots listed.
type snapCrashState struct {
	mems  map[uint64]memState
	snaps []string
}

func readSnapCrashState(t *testing.T, db *DB) snapCrashState {
	t.Helper()
	c, err := db.Collection("c")
	if err != nil {
		t.Fatal(err)
	}
	var s snapCrashState
	s.mems = collState(t, c)
	list, err := c.Snapshots()
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range list {
		if x.Damage != "" {
			t.Fatalf("snapshot %q damaged: %s", x.Name, x.Damage)
		}
		s.snaps = append(s.snaps, x.Name)
	}
	return s
}

func (s snapCrashState) diff(o snapCrashState) string {
	if d := diffState(s.mems, o.mems); d != "" {
		return d
	}
	if !slices.Equal(s.snaps, o.snaps) {
		return fmt.Sprintf("snapshots %v, want %v", o.snaps, s.snaps)
	}
	return ""
}

func openSnapCrash(fs *vfs.MemFS) (*DB, error) {
	db, err := Open("/db", crashOpts(fs))
	if err != nil {
		return nil, err
	}
	if _, err := db.Collection("c"); err != nil {
		cfg := NewConfig(4)
		cfg.Metric, cfg.Index.Kind = L2, IndexFlat
		if err := db.Create("c", cfg); err != nil {
			db.Close()
			return nil, err
		}
	}
	return db, nil
}

// TestSnapshotRollbackCrashAtEveryKthOperation is the crash test of
// snapshots and rollback (see above).
func TestSnapshotRollbackCrashAtEveryKthOperation(t *testing.T) {
	ops := snapCrashWorkload()
	// A batch per change: a torn log can then cut a rollback between its
	// batches, which replay must not apply.
	defer func(b int) { rbBatchBytes = b }(rbBatchBytes)
	rbBatchBytes = 1
	// The oracle: the state after each prefix of the workload, and the
	// state at each snapshot.
	fs := vfs.NewMemFS()
	db, err := openSnapCrash(fs)
	if err != nil {
		t.Fatal(err)
	}
	base := fs.MutatingOps()
	states := []snapCrashState{readSnapCrashState(t, db)}
	atSnap := map[string]map[uint64]memState{}
	for i, o := range ops {
		if err := execSnapCrashOp(db, o); err != nil {
			t.Fatalf("op %d %+v: %v", i, o, err)
		}
		s := readSnapCrashState(t, db)
		states = append(states, s)
		if o.kind == "snap" {
			atSnap[o.name] = s.mems
		}
	}
	total := fs.MutatingOps()
	db.Close()

	step := int64(1)
	if testing.Short() {
		step = max((total-base)/20, 1)
	}
	points := 0
	for k := base + 1; k <= total+1; k += step {
		for _, mode := range []vfs.CrashMode{vfs.DropUnsynced, vfs.KeepRandomPrefix, vfs.TearLastSector} {
			points++
			fs := vfs.NewMemFS()
			db, err := openSnapCrash(fs)
			if err != nil {
				t.Fatal(err)
			}
			fs.PowerOffAt(k)
			acked, inflight := 0, false
			for _, o := range ops {
				if err := execSnapCrashOp(db, o); err != nil {
					if !fs.PoweredOff() {
						t.Fatalf("k %d: %+v failed before the power-off: %v", k, o, err)
					}
					inflight = true
					break
				}
				acked++
			}
			db.Close()
			what := fmt.Sprintf("power off at op %d of %d, %v, %d ops acknowledged", k, total, mode, acked)
			crashed := fs.Crash(mode, rand.New(rand.NewSource(k<<4^int64(mode))))
			db2, err := Open("/db", crashOpts(crashed))
			if err != nil {
				t.Fatalf("%s: recovery: %v", what, err)
			}
			got := readSnapCrashState(t, db2)
			d := states[acked].diff(got)
			if d != "" && inflight {
				if d2 := states[acked+1].diff(got); d2 == "" {
					d = ""
				} else {
					d += "; nor the in-flight op's state: " + d2
				}
			}
			if d != "" {
				db2.Close()
				t.Fatalf("%s: %s", what, d)
			}
			// Rollback after the crash: every snapshot listed restores
			// the state it recorded.
			c, _ := db2.Collection("c")
			for _, name := range got.snaps {
				if _, err := c.Rollback(name); err != nil {
					t.Fatalf("%s: rollback to %s after recovery: %v", what, name, err)
				}
				if d := diffState(atSnap[name], collState(t, c)); d != "" {
					t.Fatalf("%s: rollback to %s after recovery: %s", what, name, d)
				}
			}
			db2.Close()
		}
	}
	t.Logf("%d ops, %d file operations, %d crash points", len(ops), total-base, points)
}
