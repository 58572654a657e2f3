package engine

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memrl/memrl/vfs"
	"github.com/memrl/memrl/wal"
)

// readerWait is how long a test lets a read wait on a compaction before
// calling it blocked: generous, since a loaded machine is slow, yet far
// from "until the compaction ends" (which never comes: the compaction is
// itself held by the test until the read returns).
const readerWait = 10 * time.Second

// pinnedFixture is a collection of 100 memories whose first 60 a
// snapshot "s" pins (deleted after it), and 20 more added after the
// snapshot and deleted (rows a compaction frees).
func pinnedFixture(t *testing.T) (*DB, *Collection) {
	t.Helper()
	db, err := Open("/db", Options{FS: vfs.NewMemFS(), Sync: wal.SyncAlways, CheckpointInterval: -1,
		CheckpointBytes: -1, CompactShare: -1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	c := mustColl(t, db, "c", flatCfg)
	for i := 1; i <= 100; i++ {
		add(t, c, uint64(i), 0, 1, 2, 3, 4, 5, 6, 7, float32(i))
	}
	if err := c.Snapshot("s"); err != nil {
		t.Fatal(err)
	}
	var del []uint64
	for i := 1; i <= 60; i++ {
		del = append(del, uint64(i))
	}
	for i := 101; i <= 120; i++ {
		add(t, c, uint64(i), 0, 1, 2, 3, 4, 5, 6, 7, float32(i))
		del = append(del, uint64(i))
	}
	if _, err := c.Delete(del); err != nil {
		t.Fatal(err)
	}
	return db, c
}

// holdCompaction installs *hook so that the compaction stops at the first
// call for which stop returns true, and returns a channel closed once it
// has stopped there and a func that lets it go on (idempotent).
func holdCompaction(t *testing.T, hook *func(uint64), stop func(uint64) bool) (reached <-chan struct{}, release func()) {
	t.Helper()
	r, rel := make(chan struct{}), make(chan struct{})
	var once, relOnce sync.Once
	*hook = func(id uint64) {
		if stop(id) {
			once.Do(func() {
				close(r)
				<-rel
			})
		}
	}
	release = func() { relOnce.Do(func() { close(rel) }) }
	t.Cleanup(func() { release(); *hook = nil })
	return r, release
}

// mustReadDuring fails unless a read of the collection (a GET and a
// retrieval) returns while the compaction is held.
func mustReadDuring(t *testing.T, c *Collection, where string) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		if _, err := c.Get(70); err != nil {
			done <- err
			return
		}
		_, err := c.Retrieve([]float32{1, 2, 3, 4, 5, 6, 7, 70}, NewRetrieveOptions())
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("read %s: %v", where, err)
		}
	case <-time.After(readerWait):
		t.Fatalf("a read waited %v %s", readerWait, where)
	}
}

// TestCompactPinnedCopyDoesNotBlockReaders: the rows snapshots pin are
// copied without the collection's write lock (they were copied in the
// swap, under it: 200,000 pinned rows stalled every reader for seconds).
func TestCompactPinnedCopyDoesNotBlockReaders(t *testing.T) {
	_, c := pinnedFixture(t)
	reached, release := holdCompaction(t, &compactCopied, func(id uint64) bool { return id <= 60 })
	res := make(chan error, 1)
	go func() {
		_, err := c.Compact()
		res <- err
	}()
	select {
	case <-reached:
	case err := <-res:
		t.Fatalf("compaction ended (%v) without copying a pinned row", err)
	case <-time.After(readerWait):
		t.Fatal("the compaction never copied a pinned row")
	}
	mustReadDuring(t, c, "while the compaction copies pinned rows")
	release()
	if err := <-res; err != nil {
		t.Fatal(err)
	}
	if n := c.PinnedRows(); n != 60 {
		t.Fatalf("pinned rows after the compaction: %d", n)
	}
	if _, err := c.Rollback("s"); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Count(); n != 100 {
		t.Fatalf("%d memories after the rollback, want 100", n)
	}
	for id := uint64(1); id <= 100; id++ {
		if _, err := c.Get(id); err != nil {
			t.Fatalf("memory %d after the rollback: %v", id, err)
		}
	}
}

// TestCompactCheckpointDoesNotBlockReaders: the checkpoint that commits a
// compaction is written without the collection's write lock (it held it:
// 1.3 s at a million memories), and after its remap marker (remap.go):
// readers and writers of the collection go on while it is written (writers
// waited for it before the marker), and what they wrote is there after a
// restart.
func TestCompactCheckpointDoesNotBlockReaders(t *testing.T) {
	db, c := pinnedFixture(t)
	reached, release := holdCompaction(t, &compactCheckpointing, func(uint64) bool { return true })
	res := make(chan error, 1)
	go func() {
		_, err := c.Compact()
		res <- err
	}()
	select {
	case <-reached:
	case err := <-res:
		t.Fatalf("compaction ended (%v) without a checkpoint", err)
	case <-time.After(readerWait):
		t.Fatal("the compaction never reached its checkpoint")
	}
	mustReadDuring(t, c, "while the compaction's checkpoint is written")
	added := make(chan error, 1)
	go func() {
		_, err := c.Add(AddRequest{Vector: []float32{1, 2, 3, 4, 5, 6, 7, 200}, ID: 200, HasID: true})
		added <- err
	}()
	select {
	case err := <-added:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(readerWait):
		t.Fatal("an add waited for the compaction's checkpoint")
	}
	mustReadDuring(t, c, "after a write during the compaction's checkpoint")
	release()
	if err := <-res; err != nil {
		t.Fatal(err)
	}
	fs := db.fs.(*vfs.MemFS)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db2, err := Open("/db", Options{FS: fs, Sync: wal.SyncAlways, CheckpointInterval: -1, CheckpointBytes: -1,
		CompactShare: -1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	c2 := collOf(t, db2, "c")
	if n, _ := c2.Count(); n != 41 {
		t.Fatalf("%d memories after the restart, want 41", n)
	}
	if _, err := c2.Get(200); err != nil {
		t.Fatalf("the add made during the checkpoint, after the restart: %v", err)
	}
	if n := c2.PinnedRows(); n != 60 {
		t.Fatalf("pinned rows after the restart: %d", n)
	}
}

// TestCompactTailCopyDoesNotBlockReaders: the rows added while the bulk
// was copied are copied, and the index remapped, with the writers kept
// out but without the collection's write lock (they were copied under it:
// with the moves and the dead-row rebuild, 2.1 s at a million memories).
func TestCompactTailCopyDoesNotBlockReaders(t *testing.T) {
	_, c := pinnedFixture(t)
	const tailID = 500
	var addOnce sync.Once
	var addErr error
	reached, release := make(chan struct{}), make(chan struct{})
	var reachOnce, releaseOnce sync.Once
	compactCopied = func(id uint64) {
		// During copyFrozen (no lock held while it writes): add a memory
		// past its snapshot, for the swap to copy.
		addOnce.Do(func() {
			_, addErr = c.Add(AddRequest{Vector: []float32{1, 2, 3, 4, 5, 6, 7, 500}, ID: tailID, HasID: true})
		})
		if id == tailID {
			reachOnce.Do(func() {
				close(reached)
				<-release
			})
		}
	}
	rel := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(func() { rel(); compactCopied = nil })
	res := make(chan error, 1)
	go func() {
		_, err := c.Compact()
		res <- err
	}()
	select {
	case <-reached:
	case err := <-res:
		t.Fatalf("compaction ended (%v) without copying the added row (add: %v)", err, addErr)
	case <-time.After(readerWait):
		t.Fatal("the compaction never copied the added row")
	}
	mustReadDuring(t, c, "while the compaction's swap copies the rows added during it")
	rel()
	if err := <-res; err != nil {
		t.Fatal(err)
	}
	if addErr != nil {
		t.Fatal(addErr)
	}
	if _, err := c.Get(tailID); err != nil {
		t.Fatalf("the memory added during the compaction: %v", err)
	}
	if n, _ := c.Count(); n != 41 {
		t.Fatalf("%d memories after the compaction, want 41", n)
	}
}

// TestCompactCheckpointFailurePutsBack: when the checkpoint committing a
// compaction fails before its commit, the new generation stays in use
// (its remap marker is logged; a restart replays it): every memory reads
// as before (none of those a snapshot pins back), and the next compaction
// and a rollback work, also after a restart.
func TestCompactCheckpointFailurePutsBack(t *testing.T) {
	fs := vfs.NewMemFS()
	db, err := Open("/db", crashOpts(fs))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { db.Close() }()
	c, atSnap, after := maintSetup(t, db)
	fs.FailNextWrite(ckptName)
	if _, err := c.Compact(); err == nil || !strings.Contains(err.Error(), "compaction's checkpoint") {
		t.Fatalf("the compaction with its checkpoint's write failing: %v", err)
	}
	if d := diffState(after, collState(t, c)); d != "" {
		t.Fatalf("after the failed compaction: %s", d)
	}
	if _, err := c.Compact(); err != nil {
		t.Fatal(err)
	}
	if d := diffState(after, collState(t, c)); d != "" {
		t.Fatalf("after the next compaction: %s", d)
	}
	db.Close()
	if db, err = Open("/db", crashOpts(fs)); err != nil {
		t.Fatal(err)
	}
	c = collOf(t, db, "m")
	if d := diffState(after, collState(t, c)); d != "" {
		t.Fatalf("after a restart: %s", d)
	}
	if _, err := c.Rollback("s"); err != nil {
		t.Fatal(err)
	}
	if d := diffState(atSnap, collState(t, c)); d != "" {
		t.Fatalf("after the rollback: %s", d)
	}
}

// TestCompactCheckpointIndexBuildEndDoesNotBlockReaders: an index build
// that ends while the checkpoint committing a compaction is written (after
// the remap marker: writers go on) ends at once, and readers go on.
func TestCompactCheckpointIndexBuildEndDoesNotBlockReaders(t *testing.T) {
	_, c := pinnedFixture(t)
	reached, release := holdCompaction(t, &compactCheckpointing, func(uint64) bool { return true })
	res := make(chan error, 1)
	go func() {
		_, err := c.Compact()
		res <- err
	}()
	select {
	case <-reached:
	case err := <-res:
		t.Fatalf("compaction ended (%v) without a checkpoint", err)
	case <-time.After(readerWait):
		t.Fatal("the compaction never reached its checkpoint")
	}
	ended := make(chan struct{})
	go func() {
		c.finishBuild(time.Now(), nil, 0, errors.New("a build that failed"))
		close(ended)
	}()
	select {
	case <-ended:
	case <-time.After(readerWait):
		t.Fatal("a build's end waited for the compaction's checkpoint")
	}
	mustReadDuring(t, c, "after a build's end during the compaction's checkpoint")
	release()
	if err := <-res; err != nil {
		t.Fatal(err)
	}
}
