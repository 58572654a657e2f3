package engine

import (
	"errors"
	"math/rand"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/memrl/memrl/vfs"
)

// openMem opens the database at /db on fs with crashOpts.
func openMem(t *testing.T, fs *vfs.MemFS) *DB {
	t.Helper()
	db, err := Open("/db", crashOpts(fs))
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// crashOpen crashes fs, dropping unsynced writes, and opens what is left.
func crashOpen(t *testing.T, fs *vfs.MemFS, seed int64) (*vfs.MemFS, *DB) {
	t.Helper()
	crashed := fs.Crash(vfs.DropUnsynced, rand.New(rand.NewSource(seed)))
	return crashed, openMem(t, crashed)
}

func exists(fs vfs.FS, name string) bool {
	_, err := fs.Stat(name)
	return err == nil
}

func readCkpt(t *testing.T, fs vfs.FS, name string) checkpoint {
	t.Helper()
	data, err := vfs.ReadFile(fs, name)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := decodeCheckpoint(data)
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

func memIDs(c ckptCollection) []uint64 {
	var ids []uint64
	for _, m := range c.mems {
		ids = append(ids, m.id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

func addN(t *testing.T, c *Collection, from, to uint64) {
	t.Helper()
	for id := from; id < to; id++ {
		if _, err := c.Add(AddRequest{Vector: []float32{1, 2, 3, float32(id)}, Payload: []byte{byte(id)}, ID: id, HasID: true}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDeltaCheckpointHoldsOnlyChanges: after a full checkpoint, the next
// one is a delta holding exactly the memories changed (rewarded, added,
// re-added) and the ids deleted (and not re-added) since, and a reopen from full + delta
// (after a crash, with nothing to replay) gives back every change.
func TestDeltaCheckpointHoldsOnlyChanges(t *testing.T) {
	fs := vfs.NewMemFS()
	db := openMem(t, fs)
	c := mustColl(t, db, "k", crashCfg)
	other := mustColl(t, db, "gone", crashCfg)
	addN(t, c, 1, 101)
	addN(t, other, 1, 3)
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if cp := readCkpt(t, fs, "/db/CHECKPOINT"); cp.kind != ckptFull || len(cp.colls) != 2 || len(cp.colls[0].mems) != 100 {
		t.Fatalf("first checkpoint: kind %d, %d collections", cp.kind, len(cp.colls))
	}
	if _, err := c.Reward(1, []uint64{5, 6, 7}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Delete([]uint64{8, 9, 50}); err != nil {
		t.Fatal(err)
	}
	addN(t, c, 50, 51)   // re-added
	addN(t, c, 200, 201) // new
	if err := db.Drop("gone"); err != nil {
		t.Fatal(err)
	}
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	d := readCkpt(t, fs, "/db/CHECKPOINT.1")
	if d.kind != ckptDelta || d.seq != 1 || len(d.colls) != 1 {
		t.Fatalf("second checkpoint: kind %d seq %d, %d collections", d.kind, d.seq, len(d.colls))
	}
	if got := memIDs(d.colls[0]); !slices.Equal(got, []uint64{5, 6, 7, 50, 200}) {
		t.Fatalf("delta memories %v, want 5 6 7 50 200", got)
	}
	// 50 was re-added: its new state replaces it whole, no tombstone.
	if got := d.colls[0].tombs; !slices.Equal(got, []uint64{8, 9}) {
		t.Fatalf("delta tombstones %v, want 8 9", got)
	}
	want, _ := c.Get(6)

	_, db2 := crashOpen(t, fs, 1)
	defer db2.Close()
	if db2.Recovery.DeltasApplied != 1 || db2.Recovery.RecordsReplayed != 0 {
		t.Fatalf("recovery %+v, want one delta and nothing replayed", db2.Recovery)
	}
	if _, err := db2.Collection("gone"); !errors.Is(err, ErrNoCollection) {
		t.Fatalf("dropped collection after reopen: %v", err)
	}
	c2, _ := db2.Collection("k")
	if info, _ := c2.Info(); info.Count != 99 {
		t.Fatalf("%d memories after reopen, want 99", info.Count)
	}
	if got, err := c2.Get(6); err != nil || got.Q != want.Q || got.Visits != 1 {
		t.Fatalf("rewarded memory after reopen: %+v %v", got, err)
	}
	for _, id := range []uint64{8, 9} {
		if _, err := c2.Get(id); !errors.Is(err, ErrNoMemory) {
			t.Fatalf("deleted %d after reopen: %v", id, err)
		}
	}
	for _, id := range []uint64{50, 200, 1, 100} {
		if m, err := c2.Get(id); err != nil || m.Vector[3] != float32(id) || m.Payload[0] != byte(id) {
			t.Fatalf("memory %d after reopen: %+v %v", id, m, err)
		}
	}
}

// TestDeltaAfterRecoveryKeepsReplayedChanges: changes recovered by
// replaying the log must reach the next delta, since that delta lets the
// log go. A crash after it must not lose them.
func TestDeltaAfterRecoveryKeepsReplayedChanges(t *testing.T) {
	fs := vfs.NewMemFS()
	db := openMem(t, fs)
	c := mustColl(t, db, "k", crashCfg)
	addN(t, c, 1, 21)
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Reward(1, []uint64{3}, nil); err != nil {
		t.Fatal(err)
	}
	c.Delete([]uint64{4})
	addN(t, c, 30, 31)
	fs, db = crashOpen(t, fs, 2)
	if db.Recovery.RecordsReplayed != 3 {
		t.Fatalf("replayed %d records, want 3", db.Recovery.RecordsReplayed)
	}
	if err := db.Checkpoint(); err != nil { // a delta
		t.Fatal(err)
	}
	if !exists(fs, "/db/CHECKPOINT.1") {
		t.Fatal("no delta written after recovery")
	}
	fs, db = crashOpen(t, fs, 3)
	defer db.Close()
	if db.Recovery.RecordsReplayed != 0 || db.Recovery.DeltasApplied != 1 {
		t.Fatalf("recovery %+v", db.Recovery)
	}
	c, _ = db.Collection("k")
	if m, err := c.Get(3); err != nil || m.Visits != 1 {
		t.Fatalf("replayed reward lost: %+v %v", m, err)
	}
	if _, err := c.Get(4); !errors.Is(err, ErrNoMemory) {
		t.Fatalf("replayed delete lost: %v", err)
	}
	if _, err := c.Get(30); err != nil {
		t.Fatalf("replayed add lost: %v", err)
	}
}

// TestCheckpointChainPolicy: deltas follow a full checkpoint until
// maxDeltas, or until they hold more than half as many memories as it;
// the full checkpoint that follows removes them. A failed checkpoint makes
// the next one full.
func TestCheckpointChainPolicy(t *testing.T) {
	fs := vfs.NewMemFS()
	db := openMem(t, fs)
	defer db.Close()
	c := mustColl(t, db, "k", crashCfg)
	addN(t, c, 1, 101)
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= maxDeltas; i++ {
		c.Reward(1, []uint64{uint64(i)}, nil)
		if err := db.Checkpoint(); err != nil {
			t.Fatal(err)
		}
		if !exists(fs, filepath.Join("/db", ckptFileName(uint32(i)))) {
			t.Fatalf("checkpoint %d was not a delta", i)
		}
	}
	if st := db.CheckpointStatus(); st.Deltas != maxDeltas || st.LastFull || st.Last.IsZero() || st.Failures != 0 || st.Stopped != nil {
		t.Fatalf("status after %d deltas: %+v", maxDeltas, st)
	}
	chain := readCkpt(t, fs, "/db/CHECKPOINT").chainID
	c.Reward(1, []uint64{1}, nil)
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if readCkpt(t, fs, "/db/CHECKPOINT").chainID == chain {
		t.Fatal("no full checkpoint after maxDeltas deltas")
	}
	for i := 1; i <= maxDeltas; i++ {
		if exists(fs, filepath.Join("/db", ckptFileName(uint32(i)))) {
			t.Fatalf("delta %d of the old chain left behind", i)
		}
	}

	// Half the memories changed: the next one is a delta, the one after
	// full.
	chain = readCkpt(t, fs, "/db/CHECKPOINT").chainID
	ids := make([]uint64, 60)
	for i := range ids {
		ids[i] = uint64(i + 1)
	}
	c.Reward(1, ids, nil)
	db.Checkpoint()
	c.Reward(1, []uint64{1}, nil)
	db.Checkpoint()
	if readCkpt(t, fs, "/db/CHECKPOINT").chainID == chain || exists(fs, "/db/CHECKPOINT.2") {
		t.Fatal("no full checkpoint after deltas of more than half the memories")
	}

	// A delta that fails after taking the marks: the next checkpoint is
	// full, so the changes it took are not lost.
	chain = readCkpt(t, fs, "/db/CHECKPOINT").chainID
	c.Reward(1, []uint64{2}, nil)
	fs.FailNextWrite("CHECKPOINT.1")
	if err := db.Checkpoint(); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("checkpoint with a failed write: %v", err)
	}
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if readCkpt(t, fs, "/db/CHECKPOINT").chainID == chain {
		t.Fatal("checkpoint after a failed delta was not full")
	}
	if st := db.CheckpointStatus(); !st.LastFull || st.Deltas != 0 || st.Failures != 1 || st.Stopped != nil {
		t.Fatalf("status after a failed delta and a full checkpoint: %+v", st)
	}
	want, _ := c.Get(2)
	_, db3 := crashOpen(t, fs, 4)
	defer db3.Close()
	c3, _ := db3.Collection("k")
	if m, _ := c3.Get(2); m.Visits != want.Visits || m.Q != want.Q {
		t.Fatalf("after the failed delta and a crash: %+v, want visits %d", m, want.Visits)
	}
}

// TestStaleDeltaIgnored: a delta of an older chain (a crash after a new
// full checkpoint, before the old deltas were removed) is not applied.
func TestStaleDeltaIgnored(t *testing.T) {
	fs := vfs.NewMemFS()
	db := openMem(t, fs)
	c := mustColl(t, db, "k", crashCfg)
	addN(t, c, 1, 11)
	db.Checkpoint()
	c.Delete([]uint64{1})
	db.Checkpoint()
	stale, err := vfs.ReadFile(fs, "/db/CHECKPOINT.1")
	if err != nil {
		t.Fatal(err)
	}
	addN(t, c, 1, 2) // re-added
	db.chain.id = 0  // force a full checkpoint
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := vfs.WriteFileAtomic(fs, "/db/CHECKPOINT.1", stale); err != nil {
		t.Fatal(err)
	}
	db = openMem(t, fs)
	defer db.Close()
	c, _ = db.Collection("k")
	if _, err := c.Get(1); err != nil {
		t.Fatalf("the stale delta's tombstone was applied: %v", err)
	}
}

// TestCorruptDeltaRefused: a damaged delta stops Open, naming the file.
func TestCorruptDeltaRefused(t *testing.T) {
	fs := vfs.NewMemFS()
	db := openMem(t, fs)
	c := mustColl(t, db, "k", crashCfg)
	addN(t, c, 1, 11)
	db.Checkpoint()
	c.Reward(1, []uint64{1}, nil)
	if err := db.Close(); err != nil { // writes CHECKPOINT.1
		t.Fatal(err)
	}
	data, err := vfs.ReadFile(fs, "/db/CHECKPOINT.1")
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 1
	vfs.WriteFileAtomic(fs, "/db/CHECKPOINT.1", data)
	if _, err := Open("/db", crashOpts(fs)); !errors.Is(err, ErrCorruptCheckpoint) {
		t.Fatalf("Open with a corrupt delta: %v", err)
	}
}

// TestReaddBetweenDeltaSwapAndTake deletes and re-adds a memory after a
// delta took the deleted ids but before it took the dirty marks: that
// delta carries the memory's new state, and the delete must not come back
// as a tombstone in the next delta (it once did, and the memory was lost
// after a crash; found by the concurrent crash suite).
func TestReaddBetweenDeltaSwapAndTake(t *testing.T) {
	fs := vfs.NewMemFS()
	db := openMem(t, fs)
	c := mustColl(t, db, "k", crashCfg)
	addN(t, c, 1, 6)
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	defer func() { afterDeltaSwap = nil }()
	afterDeltaSwap = func(c *Collection) {
		afterDeltaSwap = nil
		if _, err := c.Delete([]uint64{3}); err != nil {
			t.Error(err)
		}
		if _, err := c.Add(AddRequest{Vector: []float32{9, 9, 9, 9}, ID: 3, HasID: true, Q: 5, HasQ: true}); err != nil {
			t.Error(err)
		}
	}
	if err := db.Checkpoint(); err != nil { // delta 1
		t.Fatal(err)
	}
	if err := db.Checkpoint(); err != nil { // delta 2
		t.Fatal(err)
	}
	if d := readCkpt(t, fs, "/db/CHECKPOINT.2"); len(d.colls[0].tombs) != 0 {
		t.Fatalf("delta 2 carries tombstones %v", d.colls[0].tombs)
	}
	_, db2 := crashOpen(t, fs, 5)
	defer db2.Close()
	c2, _ := db2.Collection("k")
	if m, err := c2.Get(3); err != nil || m.Q != 5 || m.Vector[0] != 9 {
		t.Fatalf("re-added memory after a crash: %+v %v", m, err)
	}
}
