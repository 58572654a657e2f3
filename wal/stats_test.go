package wal

import (
	"path/filepath"
	"testing"

	"github.com/memrl/memrl/internal/histo"
	"github.com/memrl/memrl/vfs"
)

// diskBytes sums the sizes of the segment files in dir.
func diskBytes(t *testing.T, fs vfs.FS, dir string) int64 {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, name := range names {
		st, err := fs.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		n += st.Size()
	}
	return n
}

// TestStatsDiskBytesAndSyncLatency checks Stats.DiskBytes against the
// files' sizes through appends, segment rolls, rotations, removals and a
// reopen, and that every fsync is timed.
func TestStatsDiskBytesAndSyncLatency(t *testing.T) {
	fs := vfs.NewMemFS()
	opts := Options{FS: fs, Dir: "/log", SegmentSize: 4096}
	l, _ := mustOpen(t, opts)
	check := func(what string) {
		t.Helper()
		st := l.Stats()
		if want := diskBytes(t, fs, "/log"); st.DiskBytes != want {
			t.Fatalf("%s: DiskBytes = %d, files hold %d (%+v)", what, st.DiskBytes, want, st)
		}
		var s histo.Snapshot
		l.SyncLatency(&s)
		if s.Count != st.Syncs || s.Sum != st.SyncNanos {
			t.Fatalf("%s: %d fsyncs timed (%d ns), Stats says %d (%d ns)", what, s.Count, s.Sum, st.Syncs, st.SyncNanos)
		}
	}
	check("empty")
	for i := range 100 { // several 4 KiB segments
		if _, err := l.Append(payload(i)); err != nil {
			t.Fatal(err)
		}
	}
	if st := l.Stats(); st.Segments < 3 || st.Syncs < 100 {
		t.Fatalf("after 100 appends: %+v", st)
	}
	check("after rolls")
	if _, err := l.Rotate(); err != nil {
		t.Fatal(err)
	}
	check("after Rotate")
	if err := l.RemoveBefore(50); err != nil {
		t.Fatal(err)
	}
	check("after RemoveBefore")
	mustClose(t, l)
	l, _ = mustOpen(t, opts)
	defer mustClose(t, l)
	check("after reopen")
	if _, err := l.Append([]byte("x")); err != nil {
		t.Fatal(err)
	}
	check("after reopen and append")
}
