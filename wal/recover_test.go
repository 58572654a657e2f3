package wal

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"

	"github.com/memrl/memrl/vfs"
)

// buildLog writes n records with payload(i) to a MemFS log and closes it.
func buildLog(t *testing.T, n int, segSize int64) (*vfs.MemFS, Options) {
	t.Helper()
	fs := vfs.NewMemFS()
	opts := Options{FS: fs, Dir: "/log", SegmentSize: segSize}
	l, _ := mustOpen(t, opts)
	for i := 1; i <= n; i++ {
		if _, err := l.Append(payload(i)); err != nil {
			t.Fatal(err)
		}
	}
	mustClose(t, l)
	return fs, opts
}

func segPath(num uint64) string { return filepath.Join("/log", segmentName(num)) }

// frameOffset returns the offset of the k-th frame (0-based) of a segment
// whose first record is payload(first).
func frameOffset(first, k int) int64 {
	off := int64(segmentHeaderSize)
	for i := 0; i < k; i++ {
		off += int64(frameSize(len(payload(first + i))))
	}
	return off
}

func fileBytes(t *testing.T, fs vfs.FS, path string) []byte {
	t.Helper()
	b, err := vfs.ReadFile(fs, path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// patch overwrites bytes of a file durably.
func patch(t *testing.T, fs vfs.FS, path string, off int64, b []byte) {
	t.Helper()
	f, err := fs.OpenReadWrite(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func truncateFile(t *testing.T, fs vfs.FS, path string, size int64) {
	t.Helper()
	f, err := fs.OpenReadWrite(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Sync()
	f.Close()
}

func snapshot(t *testing.T, fs *vfs.MemFS) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	names, _ := fs.List("/log")
	for _, n := range names {
		out[n] = fileBytes(t, fs, filepath.Join("/log", n))
	}
	return out
}

func expectCorruption(t *testing.T, fs *vfs.MemFS, opts Options, file string, off int64) *CorruptionError {
	t.Helper()
	before := snapshot(t, fs)
	_, _, err := Open(opts)
	var ce *CorruptionError
	if !errors.As(err, &ce) {
		t.Fatalf("Open: want *CorruptionError, got %v", err)
	}
	if ce.File != file || ce.Offset != off {
		t.Fatalf("corruption reported at %s:%d, want %s:%d (%v)", ce.File, ce.Offset, file, off, ce)
	}
	after := snapshot(t, fs)
	if len(after) != len(before) {
		t.Fatalf("failed Open changed the directory: %d -> %d files", len(before), len(after))
	}
	for n, b := range before {
		if !bytes.Equal(after[n], b) {
			t.Fatalf("failed Open changed %s", n)
		}
	}
	return ce
}

func TestTornTailCutAndReported(t *testing.T) {
	const n = 20
	fs, opts := buildLog(t, n, 0)
	path := segPath(1)
	size := int64(len(fileBytes(t, fs, path)))
	lastOff := frameOffset(1, n-1)
	// Cut the last record in the middle of its payload.
	truncateFile(t, fs, path, lastOff+30)

	l, rep := mustOpen(t, opts)
	want := TornTail{File: path, Offset: lastOff, Dropped: 30}
	if rep.Torn == nil || rep.Torn.File != want.File || rep.Torn.Offset != want.Offset || rep.Torn.Dropped != want.Dropped {
		t.Fatalf("torn report %+v, want %+v (file was %d bytes)", rep.Torn, want, size)
	}
	if rep.NextLSN != n {
		t.Fatalf("NextLSN %d, want %d", rep.NextLSN, n)
	}
	// Appends after the cut continue at the dropped LSN and replay.
	for i := n; i < n+5; i++ {
		lsn, err := l.Append(payload(i))
		if err != nil || lsn != LSN(i) {
			t.Fatalf("append: %d %v", lsn, err)
		}
	}
	mustClose(t, l)
	l, rep = mustOpen(t, opts)
	defer mustClose(t, l)
	if rep.Torn != nil || rep.NextLSN != n+5 {
		t.Fatalf("second reopen %+v torn %+v", rep, rep.Torn)
	}
	got := replayAll(t, l, 0)
	for i, r := range got {
		if r.lsn != LSN(i+1) || !bytes.Equal(r.rec, payload(i+1)) {
			t.Fatalf("record %d wrong after torn-tail repair", i+1)
		}
	}
	if len(got) != n+4 {
		t.Fatalf("%d records", len(got))
	}
}

func TestTornTailVariants(t *testing.T) {
	const n = 10
	lastOff := frameOffset(1, n-1)
	cases := map[string]func(t *testing.T, fs *vfs.MemFS){
		"partial header": func(t *testing.T, fs *vfs.MemFS) { truncateFile(t, fs, segPath(1), lastOff+10) },
		"garbage last frame": func(t *testing.T, fs *vfs.MemFS) {
			patch(t, fs, segPath(1), lastOff+recordHeaderSize+2, []byte{0xde, 0xad})
		},
		"zero tail": func(t *testing.T, fs *vfs.MemFS) {
			size := int64(len(fileBytes(t, fs, segPath(1))))
			patch(t, fs, segPath(1), size, make([]byte, 4096))
		},
		"garbage tail": func(t *testing.T, fs *vfs.MemFS) {
			size := int64(len(fileBytes(t, fs, segPath(1))))
			patch(t, fs, segPath(1), size, bytes.Repeat([]byte{0xa5, 0x17, 0x33}, 700))
		},
	}
	for name, damage := range cases {
		t.Run(name, func(t *testing.T) {
			fs, opts := buildLog(t, n, 0)
			damage(t, fs)
			l, rep := mustOpen(t, opts)
			defer mustClose(t, l)
			if rep.Torn == nil || rep.Torn.File != segPath(1) {
				t.Fatalf("no torn tail reported: %+v", rep)
			}
			got := replayAll(t, l, 0)
			if LSN(len(got)) != rep.NextLSN-1 || len(got) < n-1 {
				t.Fatalf("%d records replayed, NextLSN %d", len(got), rep.NextLSN)
			}
		})
	}
}

func TestMidLogCorruptionReported(t *testing.T) {
	const n = 30
	fs, opts := buildLog(t, n, 0)
	off := frameOffset(1, 10)
	b := fileBytes(t, fs, segPath(1))
	patch(t, fs, segPath(1), off+recordHeaderSize+3, []byte{b[off+recordHeaderSize+3] ^ 0x40})
	ce := expectCorruption(t, fs, opts, segPath(1), off)
	t.Logf("reported: %v", ce)
}

func TestCorruptLengthFieldMidLog(t *testing.T) {
	fs, opts := buildLog(t, 30, 0)
	off := frameOffset(1, 5)
	patch(t, fs, segPath(1), off+8, []byte{0xff, 0xff, 0xff, 0x7f}) // absurd length
	expectCorruption(t, fs, opts, segPath(1), off)
}

func TestCorruptionInNonLastSegment(t *testing.T) {
	fs, opts := buildLog(t, 200, 2048)
	// Damage the very last frame of segment 1: at the end of a segment,
	// but not of the log, so it cannot be a torn tail.
	b := fileBytes(t, fs, segPath(1))
	names, _ := fs.List("/log")
	if len(names) < 3 {
		t.Fatalf("want several segments, got %v", names)
	}
	// Find the last frame's offset by walking the frames.
	off, last := int64(segmentHeaderSize), int64(0)
	for off < int64(len(b)) {
		last = off
		off += int64(frameSize(decodeFrameHeader(b[off:]).n))
	}
	patch(t, fs, segPath(1), int64(len(b))-1, []byte{b[len(b)-1] ^ 1})
	expectCorruption(t, fs, opts, segPath(1), last)
}

func TestCorruptSegmentHeaderRefused(t *testing.T) {
	for _, field := range []struct {
		name string
		off  int64
	}{{"magic", 0}, {"version", 8}, {"number", 16}, {"base", 24}, {"checksum", 32}} {
		t.Run(field.name, func(t *testing.T) {
			fs, opts := buildLog(t, 10, 0)
			b := fileBytes(t, fs, segPath(1))
			patch(t, fs, segPath(1), field.off, []byte{b[field.off] ^ 0x08})
			expectCorruption(t, fs, opts, segPath(1), 0)
		})
	}
}

func TestWrongVersionRefused(t *testing.T) {
	fs, opts := buildLog(t, 3, 0)
	h := segmentHeader{num: 1, base: 1}.encode()
	h[8] = 2                                    // version 2, with a matching checksum
	copy(h[32:], segmentHeader{}.encode()[32:]) // placeholder, fixed below
	fixHeaderChecksum(h)
	patch(t, fs, segPath(1), 0, h)
	ce := expectCorruption(t, fs, opts, segPath(1), 0)
	if !bytes.Contains([]byte(ce.Reason), []byte("version")) {
		t.Fatalf("reason %q does not name the version", ce.Reason)
	}
}

func TestIncompleteLastSegmentHeaderRemoved(t *testing.T) {
	fs, opts := buildLog(t, 10, 0)
	// A crash while creating segment 2: its name is there, its header is not.
	patch(t, fs, segPath(2), 0, []byte("MEMRL"))
	fs.SyncDir("/log")
	l, rep := mustOpen(t, opts)
	if rep.Torn == nil || !rep.Torn.Removed || rep.Torn.File != segPath(2) || rep.NextLSN != 11 {
		t.Fatalf("report %+v torn %+v", rep, rep.Torn)
	}
	if _, err := l.Append([]byte("x")); err != nil {
		t.Fatal(err)
	}
	mustClose(t, l)
	l, rep = mustOpen(t, opts)
	defer mustClose(t, l)
	if rep.NextLSN != 12 || rep.Torn != nil {
		t.Fatalf("reopen %+v", rep)
	}
}

func TestMissingSegmentRefused(t *testing.T) {
	fs, opts := buildLog(t, 200, 2048)
	fs.Remove(segPath(2))
	fs.SyncDir("/log")
	expectCorruption(t, fs, opts, segPath(3), 0)
}
