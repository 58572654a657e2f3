package engine

import (
	"errors"
	"math/rand"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/memrl/memrl/vfs"
)

// gapSetup makes a database with memories added before and after a
// checkpoint, crashes it (kill -9: Close would checkpoint again) and
// returns what the crash left, the checkpoint's LSN and the ids added.
func gapSetup(t *testing.T, before, after int) (crashed *vfs.MemFS, ckptLSN uint64, ids []uint64) {
	t.Helper()
	fs := vfs.NewMemFS()
	db := openMem(t, fs)
	c := mustColl(t, db, "k", crashCfg)
	addN := func(n int) {
		for i := 0; i < n; i++ {
			id, err := c.Add(AddRequest{Vector: []float32{1, 2, 3, float32(len(ids))}})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
	}
	addN(before)
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	ckptLSN = uint64(db.log.NextLSN())
	addN(after)
	crashed = fs.Crash(vfs.DropUnsynced, rand.New(rand.NewSource(2)))
	db.Close()
	return crashed, ckptLSN, ids
}

// walFiles lists the segment files of /db/wal, oldest first.
func walFiles(t *testing.T, fs vfs.FS) []string {
	t.Helper()
	names, err := fs.List("/db/wal")
	if err != nil {
		t.Fatal(err)
	}
	var segs []string
	for _, n := range names {
		if strings.HasSuffix(n, ".wal") {
			segs = append(segs, filepath.Join("/db/wal", n))
		}
	}
	slices.Sort(segs)
	return segs
}

func removeFiles(t *testing.T, fs vfs.FS, paths []string) {
	t.Helper()
	for _, p := range paths {
		if err := fs.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := fs.SyncDir("/db/wal"); err != nil {
		t.Fatal(err)
	}
}

// acceptAndCheck opens the damaged database with AcceptLogGap, adds n
// memories, crashes and reopens without the option: every acknowledged
// add is there, and no id was handed out twice.
func acceptAndCheck(t *testing.T, fs *vfs.MemFS, old []uint64, n int) {
	t.Helper()
	o := crashOpts(fs)
	var logged []string
	o.Logf = func(f string, a ...any) { logged = append(logged, f) }
	o.AcceptLogGap = true
	db, err := Open("/db", o)
	if err != nil {
		t.Fatalf("open with AcceptLogGap: %v", err)
	}
	if db.Recovery.LogGap == "" {
		t.Errorf("Recovery.LogGap is empty after an accepted gap")
	}
	if !slices.ContainsFunc(logged, func(s string) bool { return strings.Contains(s, "WARNING") }) {
		t.Errorf("the accepted gap was not logged as a warning: %q", logged)
	}
	c, err := db.Collection("k")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[uint64]bool{}
	for _, id := range old {
		seen[id] = true
	}
	var added []uint64
	for i := 0; i < n; i++ {
		id, err := c.Add(AddRequest{Vector: []float32{4, 3, 2, float32(i)}, Payload: []byte("after-" + strconv.Itoa(i))})
		if err != nil {
			t.Fatal(err)
		}
		if seen[id] {
			t.Fatalf("add %d after the accepted gap got id %d, already given before", i, id)
		}
		seen[id] = true
		added = append(added, id)
	}
	// kill -9 (SyncAlways: every acknowledged add is fsynced).
	crashed := fs.Crash(vfs.DropUnsynced, rand.New(rand.NewSource(1)))
	db2, err := Open("/db", crashOpts(crashed))
	if err != nil {
		t.Fatalf("reopen after the crash (the log is whole from the checkpoint now): %v", err)
	}
	defer db2.Close()
	c2, err := db2.Collection("k")
	if err != nil {
		t.Fatal(err)
	}
	lost := 0
	for _, id := range added {
		if _, err := c2.Get(id); err != nil {
			lost++
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged adds after the accepted gap lost by a crash", lost, n)
	}
	id, err := c2.Add(AddRequest{Vector: []float32{9, 9, 9, 9}})
	if err != nil {
		t.Fatal(err)
	}
	if seen[id] {
		t.Fatalf("an add after the crash reused id %d", id)
	}
}

// wantGap checks that Open refuses the database with ErrLogGap, naming
// the checkpoint's LSN and the option that accepts the gap, and that the
// refusal changed nothing on disk.
func wantGap(t *testing.T, fs *vfs.MemFS, ckptLSN uint64) {
	t.Helper()
	before := walFiles(t, fs)
	db, err := Open("/db", crashOpts(fs))
	if err == nil {
		db.Close()
		t.Fatalf("a log that does not reach the checkpoint (LSN %d) was opened silently", ckptLSN)
	}
	if !errors.Is(err, ErrLogGap) {
		t.Fatalf("open: %v, want ErrLogGap", err)
	}
	for _, w := range []string{strconv.FormatUint(ckptLSN, 10), "AcceptLogGap", "--accept-log-gap"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the error does not say %q: %v", w, err)
		}
	}
	if after := walFiles(t, fs); !slices.Equal(before, after) {
		t.Errorf("the refused open changed the log: %v, then %v", before, after)
	}
}

// Issue 26, item 9: with wal/ emptied below the checkpoint, Open gave new
// writes LSNs below the checkpoint's, and a crash dropped them at replay
// (0 of 10 acknowledged adds survived; their ids were reused).
func TestLogRemovedBelowCheckpoint(t *testing.T) {
	fs, ckpt, ids := gapSetup(t, 5, 3)
	removeFiles(t, fs, walFiles(t, fs))
	wantGap(t, fs, ckpt)
	acceptAndCheck(t, fs, ids, 10)
}

// A log restored from an older copy ends below the checkpoint: refused,
// and accepted it continues above the checkpoint.
func TestLogOlderThanCheckpoint(t *testing.T) {
	fs := vfs.NewMemFS()
	db := openMem(t, fs)
	c := mustColl(t, db, "k", crashCfg)
	var ids []uint64
	for i := 0; i < 30; i++ {
		id, err := c.Add(AddRequest{Vector: []float32{1, 2, 3, float32(i)}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	// The "backup": the log as it is now, before the checkpoint.
	backup := map[string][]byte{}
	for _, p := range walFiles(t, fs) {
		b, err := vfs.ReadFile(fs, p)
		if err != nil {
			t.Fatal(err)
		}
		backup[p] = b
	}
	for i := 0; i < 30; i++ {
		id, err := c.Add(AddRequest{Vector: []float32{1, 2, 4, float32(i)}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	ckpt := uint64(db.log.NextLSN())
	fs = fs.Crash(vfs.DropUnsynced, rand.New(rand.NewSource(3)))
	db.Close()
	removeFiles(t, fs, walFiles(t, fs))
	for p, b := range backup {
		writeSynced(t, fs, p, b)
	}
	wantGap(t, fs, ckpt)
	acceptAndCheck(t, fs, ids, 10)
}

// Records missing between the checkpoint and the log's first record (its
// oldest segment removed): refused with ErrLogGap (before, a bare
// wal.ErrCompacted with no way to go on), and accepted, replay starts at
// the log's first record.
func TestLogStartsAboveCheckpoint(t *testing.T) {
	fs, ckpt, ids := gapSetup(t, 5, 60) // 60 adds fill several 2 KiB segments
	segs := walFiles(t, fs)
	if len(segs) < 3 {
		t.Fatalf("want at least 3 segments, have %v", segs)
	}
	removeFiles(t, fs, segs[:1])
	wantGap(t, fs, ckpt)
	acceptAndCheck(t, fs, ids, 10)
}

// No gap, no refusal: a log that reaches back to the checkpoint opens
// without the option, also when it holds no record after it.
func TestLogWholeNoGap(t *testing.T) {
	fs, _, _ := gapSetup(t, 5, 0)
	db := openMem(t, fs)
	if db.Recovery.LogGap != "" {
		t.Errorf("LogGap %q on a whole log", db.Recovery.LogGap)
	}
	db.Close()
}

func writeSynced(t *testing.T, fs vfs.FS, path string, b []byte) {
	t.Helper()
	f, err := fs.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fs.SyncDir(filepath.Dir(path)); err != nil {
		t.Fatal(err)
	}
}
