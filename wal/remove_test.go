package wal

import (
	"math/rand"
	"testing"

	"github.com/memrl/memrl/vfs"
)

// truncFile records the sizes a File is truncated to and its syncs.
type truncFile struct {
	vfs.File
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
	vfs.FS
	log []int64
}

func (t *truncFS) OpenReadWrite(name string) (vfs.File, error) {
	f, err := t.FS.OpenReadWrite(name)
	if err != nil {
		return nil, err
	}
	return &truncFile{File: f, log: &t.log}, nil
}

// TestRemoveBeforeReleasesSegments removes segments and checks, through a
// crash, that none is left under its name, even half shrunk.
func TestRemoveBeforeReleasesSegments(t *testing.T) {
	mem := vfs.NewMemFS()
	fs := &truncFS{FS: mem}
	l, _ := mustOpen(t, Options{FS: fs, Dir: "wal", SegmentSize: 4096})
	var last LSN
	for i := 0; i < 200; i++ {
		lsn, err := l.Append(payload(i))
		if err != nil {
			t.Fatal(err)
		}
		last = lsn
	}
	before := len(fs.log)
	if err := l.RemoveBefore(last); err != nil {
		t.Fatal(err)
	}
	if len(fs.log) == before {
		t.Fatal("RemoveBefore released no segment")
	}
	mustClose(t, l)
	crashed := mem.Crash(vfs.DropUnsynced, rand.New(rand.NewSource(4)))
	l2, _ := mustOpen(t, Options{FS: crashed, Dir: "wal", SegmentSize: 4096})
	defer mustClose(t, l2)
	first := l2.segments[0].base
	if first <= 1 {
		t.Fatal("no segment was removed")
	}
	got := replayAll(t, l2, first)
	if len(got) == 0 || got[0].lsn != first || got[len(got)-1].lsn != last {
		t.Fatalf("replay after RemoveBefore and a crash: %d records", len(got))
	}
	for i, r := range got {
		if i > 0 && r.lsn != got[i-1].lsn+1 {
			t.Fatalf("gap in the log at %d", r.lsn)
		}
	}
}
