package vfs

import (
	"bytes"
	"math/rand"
	"testing"
)

// truncFile records the sizes a File is truncated to and its syncs.
type truncFile struct {
	File
	log *[]int64 // truncation sizes; -1 marks a Sync
}

func (f *truncFile) Truncate(size int64) error {
	*f.log = append(*f.log, size)
	return f.File.Truncate(size)
}

func (f *truncFile) Sync() error {
	*f.log = append(*f.log, -1)
	return f.File.Sync()
}

// truncFS hands out truncFiles from OpenReadWrite, all logging to log.
type truncFS struct {
	FS
	log []int64
}

func (t *truncFS) OpenReadWrite(name string) (File, error) {
	f, err := t.FS.OpenReadWrite(name)
	if err != nil {
		return nil, err
	}
	return &truncFile{File: f, log: &t.log}, nil
}

// checkReleaseSteps fails unless log shrinks a file of size bytes to 0
// one releaseChunk at a time, syncing after each step.
func checkReleaseSteps(t *testing.T, log []int64, size int64) {
	t.Helper()
	var want []int64
	for size > 0 {
		size = max(size-releaseChunk, 0)
		want = append(want, size, -1)
	}
	if len(log) != len(want) {
		t.Fatalf("release steps %v, want %v", log, want)
	}
	for i := range want {
		if log[i] != want[i] {
			t.Fatalf("release steps %v, want %v", log, want)
		}
	}
}

func TestReleasePacedShrinksInSyncedSteps(t *testing.T) {
	for _, size := range []int64{0, 1, releaseChunk, 3*releaseChunk + 5} {
		fs := &truncFS{FS: NewMemFS()}
		f, _ := fs.FS.Create("/f")
		f.Write(make([]byte, size))
		f.Close()
		h, err := openToRelease(fs, "/f")
		if err != nil || h == nil {
			t.Fatalf("openToRelease: %v %v", h, err)
		}
		if err := fs.Remove("/f"); err != nil {
			t.Fatal(err)
		}
		if err := ReleasePaced(h); err != nil {
			t.Fatal(err)
		}
		checkReleaseSteps(t, fs.log, size)
		if _, err := h.Write([]byte("x")); err == nil {
			t.Fatal("handle still open after ReleasePaced")
		}
	}
	if h, err := openToRelease(NewMemFS(), "/missing"); h != nil || err != nil {
		t.Fatalf("openToRelease of a missing file: %v %v", h, err)
	}
}

// TestAtomicFileCommitReleasesOldVersion replaces a large file: the old
// version is shrunk in paced steps after the rename, and the new one is
// intact, durably.
func TestAtomicFileCommitReleasesOldVersion(t *testing.T) {
	mem := NewMemFS()
	fs := &truncFS{FS: mem}
	old := bytes.Repeat([]byte("o"), 2*releaseChunk+7)
	if err := WriteFileAtomic(fs, "/ckpt", old); err != nil {
		t.Fatal(err)
	}
	if len(fs.log) != 0 {
		t.Fatalf("first version released something: %v", fs.log)
	}
	data := bytes.Repeat([]byte("n"), 100)
	if err := WriteFileAtomic(fs, "/ckpt", data); err != nil {
		t.Fatal(err)
	}
	checkReleaseSteps(t, fs.log, int64(len(old)))
	crashed := mem.Crash(DropUnsynced, rand.New(rand.NewSource(3)))
	if got, err := ReadFile(crashed, "/ckpt"); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("after a crash: %q %v", got, err)
	}
}

// TestRemoveAllPaced removes a folder tree: large files are shrunk in
// synced steps after the removal, small ones just removed, and after a
// crash nothing of the tree is left.
func TestRemoveAllPaced(t *testing.T) {
	mem := NewMemFS()
	fs := &truncFS{FS: mem}
	mem.MkdirAll("/root/c/ivf", 0o755)
	for name, size := range map[string]int{"/root/c/vectors": 2*releaseChunk + 1, "/root/c/small": 10, "/root/c/ivf/idx": releaseChunk} {
		f, _ := mem.Create(name)
		f.Write(make([]byte, size))
		f.Sync()
		f.Close()
	}
	mem.SyncDir("/root/c")
	mem.SyncDir("/root/c/ivf")
	if err := RemoveAllPaced(fs, "/root/c"); err != nil {
		t.Fatal(err)
	}
	syncs, steps := 0, 0
	for _, v := range fs.log {
		if v == -1 {
			syncs++
		} else {
			steps++
		}
	}
	if steps != 3+1 || syncs != steps {
		t.Fatalf("release steps %v: want 3 for the 2 MiB file and 1 for the 1 MiB one, each synced", fs.log)
	}
	if _, err := mem.Stat("/root/c"); err == nil {
		t.Fatal("folder still there")
	}
	crashed := mem.Crash(DropUnsynced, rand.New(rand.NewSource(6)))
	if names, _ := crashed.List("/root"); len(names) != 0 {
		t.Fatalf("after a crash /root holds %v", names)
	}
	if err := RemoveAllPaced(fs, "/root/missing"); err != nil {
		t.Fatalf("RemoveAllPaced of a missing folder: %v", err)
	}
}
