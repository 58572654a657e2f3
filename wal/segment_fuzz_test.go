package wal

import (
	"errors"
	"runtime"
	"testing"

	"github.com/memrl/memrl/fuzz/corpus"
	"github.com/memrl/memrl/vfs"
)

// segmentSeeds returns real segment files: a log of a few records of
// varying length, whole, cut inside a frame, and with bytes appended.
// They are the committed seed corpus of FuzzOpenSegmentBytes
// (TestFuzzSeedsSegment keeps it current).
func segmentSeeds(t *testing.T) map[string]corpus.Seed {
	t.Helper()
	fs := vfs.NewMemFS()
	l, _, err := Open(Options{FS: fs, Dir: "/log"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 6; i++ {
		if _, err := l.Append(payload(i)); err != nil {
			t.Fatal(err)
		}
	}
	mustClose(t, l)
	seg := fileBytes(t, fs, "/log/"+segmentName(1))
	hdr := seg[:segmentHeaderSize]
	return map[string]corpus.Seed{
		"whole":         {seg, false},
		"body":          {seg[segmentHeaderSize:], true},
		"torn-frame":    {seg[:len(seg)-5], false},
		"torn-header":   {seg[:segmentHeaderSize+10], false},
		"garbage-tail":  {append(append([]byte(nil), seg...), "not a frame at all"...), false},
		"header-only":   {hdr, false},
		"short-header":  {hdr[:17], false},
		"empty-body":    {[]byte{}, true},
		"zeroed-middle": {append(append(append([]byte(nil), seg[:200]...), make([]byte, 64)...), seg[264:]...), false},
	}
}

func TestFuzzSeedsSegment(t *testing.T) {
	corpus.Check(t, "FuzzOpenSegmentBytes", segmentSeeds(t))
}

// allocatedBytes returns the bytes allocated so far by the process
// (runtime.MemStats.TotalAlloc); the difference of two readings bounds
// what the code between them allocated.
func allocatedBytes() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

// FuzzOpenSegmentBytes opens a log whose only segment holds arbitrary
// bytes (after a valid header for segment 1 when withHeader is set, so
// that the fuzzer works on frames). Invariants:
//
//   - Open never panics; it fails only with a *CorruptionError, and then
//     changes nothing on disk;
//   - Open allocates at most a constant (the reader's buffer) plus a small
//     multiple of the file size, whatever the record lengths declare;
//   - an opened log replays exactly the records its report counts, with
//     dense LSNs from 1, and each of them is a frame that was present, in
//     order, at the start of the file: recovery keeps a prefix;
//   - the log then accepts an append, and reopening it replays the same
//     records plus the new one (a torn tail, once cut, stays cut).
func FuzzOpenSegmentBytes(f *testing.F) {
	f.Add([]byte{}, true)
	f.Fuzz(func(t *testing.T, data []byte, withHeader bool) {
		if withHeader {
			data = append(segmentHeader{num: 1, base: 1}.encode(), data...)
		}
		fs := vfs.NewMemFS()
		if err := fs.MkdirAll("/log", 0o755); err != nil {
			t.Fatal(err)
		}
		path := "/log/" + segmentName(1)
		if err := vfs.WriteFileAtomic(fs, path, data); err != nil {
			t.Fatal(err)
		}
		opts := Options{FS: fs, Dir: "/log", Sync: SyncAlways}
		before := snapshot(t, fs)
		alloc := allocatedBytes()
		l, rep, err := Open(opts)
		if used := allocatedBytes() - alloc; used > 1<<20+4*uint64(len(data)) {
			t.Fatalf("opening a %d-byte segment allocated %d bytes", len(data), used)
		}
		var ce *CorruptionError
		if errors.As(err, &ce) {
			after := snapshot(t, fs)
			if len(after) != len(before) {
				t.Fatalf("refused Open changed the directory: %d files, was %d", len(after), len(before))
			}
			for n, b := range before {
				if string(after[n]) != string(b) {
					t.Fatalf("refused Open changed %s", n)
				}
			}
			return
		}
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		if rep.FirstLSN != 1 {
			t.Fatalf("report %+v: first LSN is not 1", rep)
		}
		// The records replayed must be the frames at the start of the
		// original bytes, in order.
		var recs [][]byte
		off := segmentHeaderSize
		err = l.Replay(1, func(lsn LSN, rec []byte) error {
			if lsn != LSN(len(recs)+1) {
				t.Fatalf("replayed LSN %d after %d records", lsn, len(recs))
			}
			end := off + frameSize(len(rec))
			if end > len(data) {
				t.Fatalf("record %d (%d bytes) ends past the original %d bytes", lsn, len(rec), len(data))
			}
			want := appendFrame(nil, lsn, rec, payloadDigest(rec))
			if string(data[off:end]) != string(want) {
				t.Fatalf("record %d is not the frame at offset %d of the original file", lsn, off)
			}
			off = end
			recs = append(recs, append([]byte(nil), rec...))
			return nil
		})
		if err != nil || LSN(len(recs)) != rep.NextLSN-1 {
			t.Fatalf("replay: %v, %d records, report %+v", err, len(recs), rep)
		}
		if _, err := l.Append([]byte("after")); err != nil {
			t.Fatalf("append after recovery: %v", err)
		}
		mustClose(t, l)
		l, rep2, err := Open(opts)
		if err != nil {
			t.Fatalf("reopen: %v", err)
		}
		defer l.Close()
		if rep2.Torn != nil || rep2.NextLSN != rep.NextLSN+1 {
			t.Fatalf("reopen report %+v after %+v and one append", rep2, rep)
		}
		i := 0
		err = l.Replay(1, func(lsn LSN, rec []byte) error {
			want := []byte("after")
			if i < len(recs) {
				want = recs[i]
			}
			if string(rec) != string(want) {
				t.Fatalf("after reopen, record %d = %q, want %q", lsn, rec, want)
			}
			i++
			return nil
		})
		if err != nil || i != len(recs)+1 {
			t.Fatalf("replay after reopen: %v, %d records", err, i)
		}
	})
}
