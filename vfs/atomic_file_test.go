package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
)

func version(i int) []byte {
	// Versions differ in length and content, and span several sectors,
	// so a mix of two would be visible.
	return bytes.Repeat([]byte(fmt.Sprintf("v%04d|", i)), 100+i%7*50)
}

func TestWriteFileAtomicRoundTrip(t *testing.T) {
	for _, fsName := range []string{"mem", "os"} {
		t.Run(fsName, func(t *testing.T) {
			var fs FS = NewMemFS()
			dir := "/"
			if fsName == "os" {
				fs, dir = Default, t.TempDir()
			}
			path := dir + "/ckpt"
			for i := 0; i < 3; i++ {
				if err := WriteFileAtomic(fs, path, version(i)); err != nil {
					t.Fatal(err)
				}
				got, err := ReadFile(fs, path)
				if err != nil || !bytes.Equal(got, version(i)) {
					t.Fatalf("ReadFile after write %d: %v", i, err)
				}
			}
			if _, err := fs.Stat(path + atomicTempSuffix); err == nil {
				t.Fatal("temporary file left behind")
			}
		})
	}
}

// TestWriteFileAtomicSurvivesCrash crashes, at random moments and in every
// mode, while a writer replaces the file again and again: the file
// always holds exactly one complete version, no older than the last one
// whose WriteFileAtomic returned before the crash.
func TestWriteFileAtomicSurvivesCrash(t *testing.T) {
	fs := NewMemFS()
	fs.MkdirAll("/d", 0o755)
	if err := WriteFileAtomic(fs, "/d/ckpt", version(0)); err != nil {
		t.Fatal(err)
	}
	var done atomic.Int64 // last version whose write returned
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 1; !stop.Load(); i++ {
			if err := WriteFileAtomic(fs, "/d/ckpt", version(i)); err != nil {
				t.Error(err)
				return
			}
			done.Store(int64(i))
		}
	}()
	rng := rand.New(rand.NewSource(1))
	for c := 0; c < 300; c++ {
		floor := int(done.Load())
		mode := CrashMode(c % 3)
		crashed := fs.Crash(mode, rng)
		got, err := ReadFile(crashed, "/d/ckpt")
		if err != nil {
			t.Fatalf("crash %d (%v): checkpoint missing: %v", c, mode, err)
		}
		var v int
		if _, err := fmt.Sscanf(string(got), "v%04d|", &v); err != nil || !bytes.Equal(got, version(v)) {
			t.Fatalf("crash %d (%v): file is not a complete version (%d bytes)", c, mode, len(got))
		}
		if v < floor {
			t.Fatalf("crash %d (%v): found version %d, but %d was durably written", c, mode, v, floor)
		}
	}
	stop.Store(true)
	wg.Wait()
}

func TestWriteFileAtomicFailureKeepsOld(t *testing.T) {
	for _, inject := range []string{"write", "sync", "syncdir"} {
		t.Run(inject, func(t *testing.T) {
			fs := NewMemFS()
			fs.MkdirAll("/d", 0o755)
			if err := WriteFileAtomic(fs, "/d/f", []byte("old")); err != nil {
				t.Fatal(err)
			}
			switch inject {
			case "write":
				fs.FailNextWrite("f.tmp")
			case "sync":
				fs.FailNextSync("f.tmp")
			case "syncdir":
				fs.FailNextSyncDir("/d")
			}
			if err := WriteFileAtomic(fs, "/d/f", []byte("new")); !errors.Is(err, ErrInjected) {
				t.Fatalf("want injected error, got %v", err)
			}
			got, _ := ReadFile(fs.Crash(DropUnsynced, nil), "/d/f")
			if string(got) != "old" && !(inject == "syncdir" && string(got) == "new") {
				t.Fatalf("after failed write, crash shows %q", got)
			}
			if inject != "syncdir" {
				if cur, _ := ReadFile(fs, "/d/f"); string(cur) != "old" {
					t.Fatalf("failed write changed the file to %q", cur)
				}
			}
		})
	}
}
