package vfs

import (
	"bytes"
	"errors"
	"math/rand"
	"testing"
)

// wbFile records the write-backs and syncs made on a File.
type wbFile struct {
	File
	ranges [][2]int64 // [off, off+n) per WriteBack
	syncs  int
	fail   error // returned by the next WriteBack when set
}

func (f *wbFile) WriteBack(off, n int64) error {
	if f.fail != nil {
		return f.fail
	}
	f.ranges = append(f.ranges, [2]int64{off, off + n})
	return nil
}

func (f *wbFile) Sync() error { f.syncs++; return f.File.Sync() }

// wbFS hands out wbFiles from Create.
type wbFS struct {
	FS
	last *wbFile
}

func (w *wbFS) Create(name string) (File, error) {
	f, err := w.FS.Create(name)
	if err != nil {
		return nil, err
	}
	w.last = &wbFile{File: f}
	return w.last, nil
}

// checkCover fails unless ranges are consecutive pieces of at most
// writeBackChunk bytes covering exactly [from, to).
func checkCover(t *testing.T, ranges [][2]int64, from, to int64) {
	t.Helper()
	at := from
	for _, r := range ranges {
		if r[0] != at || r[1] <= r[0] || r[1]-r[0] > writeBackChunk {
			t.Fatalf("write-backs %v do not cover [%d, %d) in pieces", ranges, from, to)
		}
		at = r[1]
	}
	if at != to {
		t.Fatalf("write-backs %v stop at %d, want %d", ranges, at, to)
	}
}

func TestSyncPacedWritesBackThenSyncs(t *testing.T) {
	fs := NewMemFS()
	for _, c := range []struct{ from, to int64 }{
		{0, 0}, {0, 1}, {5, 5}, {0, writeBackChunk}, {100, 3*writeBackChunk + 17}, {-4, 10},
	} {
		f, err := fs.Create("/f")
		if err != nil {
			t.Fatal(err)
		}
		wf := &wbFile{File: f}
		if err := SyncPaced(wf, c.from, c.to); err != nil {
			t.Fatal(err)
		}
		checkCover(t, wf.ranges, max(c.from, 0), max(c.to, max(c.from, 0)))
		if wf.syncs != 1 {
			t.Fatalf("[%d, %d): %d syncs, want 1", c.from, c.to, wf.syncs)
		}
		f.Close()
	}
}

func TestSyncPacedFailedWriteBackIsNotSynced(t *testing.T) {
	f, _ := NewMemFS().Create("/f")
	boom := errors.New("EIO")
	wf := &wbFile{File: f, fail: boom}
	if err := SyncPaced(wf, 0, 10); !errors.Is(err, boom) {
		t.Fatalf("SyncPaced = %v, want %v", err, boom)
	}
	if wf.syncs != 0 {
		t.Fatal("synced after a failed write-back")
	}
}

// TestAtomicFileWritesBackAsItGoes writes a file in odd-sized pieces and
// checks that whole chunks were written back while it was written, the
// rest at Commit, and that one fsync made it durable.
func TestAtomicFileWritesBackAsItGoes(t *testing.T) {
	fs := &wbFS{FS: NewMemFS()}
	rng := rand.New(rand.NewSource(1))
	data := make([]byte, 3*writeBackChunk+12345)
	rng.Read(data)
	a, err := CreateAtomic(fs, "/ckpt")
	if err != nil {
		t.Fatal(err)
	}
	for rest := data; len(rest) > 0; {
		n := min(len(rest), 1+rng.Intn(300000))
		if _, err := a.Write(rest[:n]); err != nil {
			t.Fatal(err)
		}
		rest = rest[n:]
	}
	wf := fs.last
	checkCover(t, wf.ranges, 0, 3*writeBackChunk)
	if wf.syncs != 0 {
		t.Fatalf("%d fsyncs before Commit", wf.syncs)
	}
	if err := a.Commit(); err != nil {
		t.Fatal(err)
	}
	checkCover(t, wf.ranges, 0, int64(len(data)))
	if wf.syncs != 1 {
		t.Fatalf("%d fsyncs, want 1", wf.syncs)
	}
	got, err := ReadFile(fs, "/ckpt")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("contents differ after Commit (%v)", err)
	}
	// Durable: a crash keeps it.
	crashed := fs.FS.(*MemFS).Crash(DropUnsynced, rng)
	if got, err := ReadFile(crashed, "/ckpt"); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("contents lost in a crash after Commit (%v)", err)
	}
}

// TestAtomicFileFailedWriteKeepsOld: a failed Write is sticky, Commit
// reports it, and the old version stays with no temporary file left.
func TestAtomicFileFailedWriteKeepsOld(t *testing.T) {
	fs := NewMemFS()
	if err := WriteFileAtomic(fs, "/f", []byte("old")); err != nil {
		t.Fatal(err)
	}
	a, err := CreateAtomic(fs, "/f")
	if err != nil {
		t.Fatal(err)
	}
	a.Write([]byte("ne"))
	fs.FailNextWrite("f.tmp")
	if _, err := a.Write([]byte("w")); !errors.Is(err, ErrInjected) {
		t.Fatalf("Write = %v, want ErrInjected", err)
	}
	if _, err := a.Write([]byte("!")); !errors.Is(err, ErrInjected) {
		t.Fatalf("Write after a failure = %v, want the same error", err)
	}
	if err := a.Commit(); !errors.Is(err, ErrInjected) {
		t.Fatalf("Commit = %v, want ErrInjected", err)
	}
	if got, _ := ReadFile(fs, "/f"); string(got) != "old" {
		t.Fatalf("file holds %q after a failed write", got)
	}
	if _, err := fs.Stat("/f" + atomicTempSuffix); err == nil {
		t.Fatal("temporary file left behind")
	}
}
