package engine

import (
	"errors"
	"math/rand"
	"testing"
	"time"

	"github.com/memrl/memrl/vfs"
)

// Tests of compaction's remap marker (remap.go): writers go on while the
// checkpoint naming the new generation is written, and a crash between
// the marker and that checkpoint's commit recovers through the marker.

// TestCompactWritersGoOnDuringCheckpoint: an add started as the
// compaction's checkpoint starts is acknowledged while that checkpoint is
// still held up. (Before the marker, writers waited at writeGate until
// the checkpoint was committed: the add returned only after it.)
func TestCompactWritersGoOnDuringCheckpoint(t *testing.T) {
	db, err := Open(t.TempDir(), Options{Logf: func(string, ...any) {}, CheckpointInterval: -1, CheckpointBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, _, _ := maintSetup(t, db)
	hooked, returned := false, false
	var addErr error
	compactCheckpointing = func(uint64) {
		if hooked {
			return
		}
		hooked = true
		res := make(chan error, 1)
		go func() {
			_, err := c.Add(AddRequest{Vector: []float32{0.5, 0.5, 0.5, 0.5}, ID: commitCrashAddID, HasID: true})
			res <- err
		}()
		// The checkpoint is held up here until the add returns, or for
		// a generous deadline (an add waiting for the checkpoint would
		// wait for this).
		select {
		case addErr = <-res:
			returned = true
		case <-time.After(20 * time.Second):
		}
	}
	defer func() { compactCheckpointing = nil }()
	if _, err := c.Compact(); err != nil {
		t.Fatal(err)
	}
	if !hooked {
		t.Fatal("the compaction never reached its checkpoint")
	}
	if !returned {
		t.Fatal("an add waited for the compaction's checkpoint")
	}
	if addErr != nil {
		t.Fatal(addErr)
	}
	if _, err := c.Get(commitCrashAddID); err != nil {
		t.Fatalf("the add made during the checkpoint: %v", err)
	}
}

// remapCrash runs maintSetup and a compaction over a MemFS whose power
// goes out as the compaction's checkpoint starts, after a reward, an add,
// a payload update and a delete were acknowledged there (logged after the
// marker, against the new rows). It returns the crashed file system, the
// state acknowledged, the generation compacted to and the collection's
// folder.
func remapCrash(t *testing.T, mode vfs.CrashMode) (crashed *vfs.MemFS, want map[uint64]memState, gen uint64, dir string) {
	t.Helper()
	fs := vfs.NewMemFS()
	db, err := Open("/db", crashOpts(fs))
	if err != nil {
		t.Fatal(err)
	}
	c, _, after := maintSetup(t, db)
	var ids []uint64
	for id := range after {
		ids = append(ids, id)
	}
	if len(ids) < 3 {
		t.Fatalf("%d memories left", len(ids))
	}
	compactCheckpointing = func(uint64) {
		compactCheckpointing = nil
		gen = c.gen
		if _, err := c.Reward(1, []uint64{ids[0]}, nil); err != nil {
			t.Error(err)
		}
		if _, err := c.Add(AddRequest{Vector: []float32{0.5, 0.5, 0.5, 0.5}, Payload: []byte("after the marker"), ID: commitCrashAddID, HasID: true}); err != nil {
			t.Error(err)
		}
		if err := c.SetPayload(ByID(ids[1]), []byte("replaced after the marker")); err != nil {
			t.Error(err)
		}
		if _, err := c.Delete([]uint64{ids[2]}); err != nil {
			t.Error(err)
		}
		want = collState(t, c)
		fs.PowerOffAt(1) // the next mutating operation fails (PowerOffAt counts afresh)
	}
	defer func() { compactCheckpointing = nil }()
	if _, err := c.Compact(); err == nil {
		t.Fatal("the compaction's checkpoint succeeded after the power went out")
	}
	if t.Failed() || want == nil {
		t.FailNow()
	}
	db.Close()
	return fs.Crash(mode, rand.New(rand.NewSource(1))), want, gen, c.dir
}

// TestRemapMarkerRecovery: a crash after the marker, before the checkpoint
// naming the new generation, recovers the new generation through the
// marker with every write acknowledged after it, once; the open's own
// checkpoint then names it and removes the old files, and a second open
// agrees.
func TestRemapMarkerRecovery(t *testing.T) {
	for _, mode := range []vfs.CrashMode{vfs.DropUnsynced, vfs.KeepRandomPrefix, vfs.TearLastSector} {
		crashed, want, gen, _ := remapCrash(t, mode)
		for round := range 2 {
			db, err := Open("/db", crashOpts(crashed))
			if err != nil {
				t.Fatalf("%v, open %d: %v", mode, round, err)
			}
			c, err := db.Collection("m")
			if err != nil {
				t.Fatal(err)
			}
			if c.gen != gen {
				t.Errorf("%v, open %d: generation %d, want %d", mode, round, c.gen, gen)
			}
			if d := diffState(want, collState(t, c)); d != "" {
				t.Errorf("%v, open %d: recovered state: %s", mode, round, d)
			}
			names, err := crashed.List(c.dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range names {
				if g, ok := fileGen(n); ok && g != gen {
					t.Errorf("%v, open %d: %s of generation %d left", mode, round, n, g)
				}
				if n == genName(remapBase, remapExt, gen) {
					t.Errorf("%v, open %d: the row map is left after a checkpoint named its generation", mode, round)
				}
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestRemapMapCorrupt: a row map damaged (a flipped byte, a cut) while
// its marker is in the log is refused at open with ErrCorrupt, and the
// open changes nothing: with the map repaired, the next open recovers.
func TestRemapMapCorrupt(t *testing.T) {
	for i := range 3 {
		crashed, want, gen, dir := remapCrash(t, vfs.DropUnsynced)
		path := remapPath(dir, gen)
		good, err := vfs.ReadFile(crashed, path)
		if err != nil {
			t.Fatal(err)
		}
		var bad []byte
		switch i {
		case 0:
			bad = append([]byte(nil), good...)
			bad[40] ^= 1
		case 1:
			bad = good[:len(good)-3]
		case 2:
			bad = good[:10]
		}
		if err := vfs.WriteFileAtomic(crashed, path, bad); err != nil {
			t.Fatal(err)
		}
		if db, err := Open("/db", crashOpts(crashed)); !errors.Is(err, ErrCorrupt) {
			if err == nil {
				db.Close()
			}
			t.Fatalf("open with a damaged row map (%d of %d bytes): %v, want ErrCorrupt", len(bad), len(good), err)
		}
		if err := vfs.WriteFileAtomic(crashed, path, good); err != nil {
			t.Fatal(err)
		}
		db, err := Open("/db", crashOpts(crashed))
		if err != nil {
			t.Fatalf("open after repairing the row map: %v", err)
		}
		c, _ := db.Collection("m")
		if d := diffState(want, collState(t, c)); d != "" {
			t.Errorf("after repairing the row map: %s", d)
		}
		db.Close()
	}
}

// TestRemapRecordRoundTrip: a remap marker decodes to what was encoded,
// and a record of another length is refused.
func TestRemapRecordRoundTrip(t *testing.T) {
	r := remapRec{uid: 3, gen: 2, nrows: 1e6, paySize: 1 << 40, mapSum: 0xdead_beef}
	got, err := decodeRemap(encodeRemap(r))
	if err != nil || got != r {
		t.Fatalf("%+v, %v", got, err)
	}
	if _, err := decodeRemap(encodeRemap(r)[:36]); !errors.Is(err, errBadRecord) {
		t.Fatalf("short record: %v", err)
	}
}

// TestRemapMarkerRecoveryCrashAgain: the power goes out at every file
// operation of the open that replays a remap marker (its checkpoint naming
// the new generation, the removal of the old files); the next open still
// recovers every acknowledged write, once.
func TestRemapMarkerRecoveryCrashAgain(t *testing.T) {
	crashed, want, gen, _ := remapCrash(t, vfs.DropUnsynced)
	points, step := 0, int64(1)
	if shortSweep() { // sweep_test.go
		step = 9
	}
	for k := int64(1); ; k += step {
		fs := crashed.Crash(vfs.DropUnsynced, rand.New(rand.NewSource(k))) // a copy: everything on it is durable
		fs.PowerOffAt(k)
		db, err := Open("/db", crashOpts(fs))
		if err == nil {
			db.Close()
		}
		done := !fs.PoweredOff()
		for _, mode := range []vfs.CrashMode{vfs.DropUnsynced, vfs.KeepRandomPrefix, vfs.TearLastSector} {
			again := fs.Crash(mode, rand.New(rand.NewSource(k)))
			db2, err := Open("/db", crashOpts(again))
			if err != nil {
				t.Fatalf("power off at op %d of the first open, %v: %v", k, mode, err)
			}
			c, err := db2.Collection("m")
			if err != nil {
				t.Fatal(err)
			}
			if c.gen != gen {
				t.Errorf("power off at op %d, %v: generation %d, want %d", k, mode, c.gen, gen)
			}
			if d := diffState(want, collState(t, c)); d != "" {
				t.Errorf("power off at op %d, %v: %s", k, mode, d)
			}
			db2.Close()
			points++
		}
		if done {
			break
		}
		if k > 10000 {
			t.Fatal("the open never finished")
		}
	}
	t.Logf("%d crash points", points)
}
