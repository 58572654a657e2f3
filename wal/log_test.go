package wal

import (
	"bytes"
	"errors"
	"testing"

	"github.com/memrl/memrl/vfs"
)

func TestRoundTripSegmentsReopenReplay(t *testing.T) {
	for _, pol := range []SyncPolicy{SyncAlways, SyncInterval, SyncNone} {
		t.Run(pol.String(), func(t *testing.T) {
			for _, fsName := range []string{"mem", "os"} {
				t.Run(fsName, func(t *testing.T) {
					var fs vfs.FS = vfs.NewMemFS()
					dir := "/log"
					if fsName == "os" {
						fs, dir = vfs.Default, t.TempDir()
					}
					opts := Options{FS: fs, Dir: dir, Sync: pol, SegmentSize: 4096}
					l, rep := mustOpen(t, opts)
					if rep.NextLSN != 1 || rep.FirstLSN != 1 || rep.Torn != nil {
						t.Fatalf("fresh log report %+v", rep)
					}
					const n = 500
					for i := 1; i <= n; i++ {
						lsn, err := l.Append(payload(i))
						if err != nil {
							t.Fatal(err)
						}
						if lsn != LSN(i) {
							t.Fatalf("Append %d got LSN %d", i, lsn)
						}
					}
					if err := l.Sync(); err != nil {
						t.Fatal(err)
					}
					if st := l.Stats(); st.Segments < 5 || st.Records != n {
						t.Fatalf("stats %+v: want several segments and %d records", st, n)
					}
					mustClose(t, l)

					l, rep = mustOpen(t, opts)
					defer mustClose(t, l)
					if rep.NextLSN != n+1 || rep.FirstLSN != 1 || rep.Torn != nil || rep.Records() != n {
						t.Fatalf("reopen report %+v", rep)
					}
					got := replayAll(t, l, 0)
					if len(got) != n {
						t.Fatalf("replayed %d records, want %d", len(got), n)
					}
					for i, r := range got {
						if r.lsn != LSN(i+1) || !bytes.Equal(r.rec, payload(i+1)) {
							t.Fatalf("record %d: lsn %d rec %q", i+1, r.lsn, r.rec)
						}
					}
					mid := replayAll(t, l, 321)
					if len(mid) != n-320 || mid[0].lsn != 321 || !bytes.Equal(mid[0].rec, payload(321)) {
						t.Fatalf("replay from 321: %d records, first %+v", len(mid), mid[0].lsn)
					}
					if got := replayAll(t, l, n+1); len(got) != 0 {
						t.Fatalf("replay past the end returned %d records", len(got))
					}
					// Appending after reopen continues the sequence.
					lsn, err := l.Append([]byte("after"))
					if err != nil || lsn != n+1 {
						t.Fatalf("Append after reopen: %d, %v", lsn, err)
					}
				})
			}
		})
	}
}

func TestEmptyAndLargeRecords(t *testing.T) {
	fs := vfs.NewMemFS()
	opts := Options{FS: fs, Dir: "/log", SegmentSize: 1 << 16}
	l, _ := mustOpen(t, opts)
	big := bytes.Repeat([]byte("x"), 3<<20) // larger than a segment
	recs := [][]byte{{}, big, []byte("small"), {}}
	for _, r := range recs {
		if _, err := l.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Append(make([]byte, MaxRecordSize+1)); !errors.Is(err, ErrRecordTooLarge) {
		t.Fatalf("oversized record: %v", err)
	}
	if _, err := l.AppendBatch([][]byte{[]byte("ok"), make([]byte, MaxRecordSize+1)}); !errors.Is(err, ErrRecordTooLarge) {
		t.Fatalf("oversized batch: %v", err)
	}
	mustClose(t, l)
	l, rep := mustOpen(t, opts)
	defer mustClose(t, l)
	if rep.NextLSN != LSN(len(recs)+1) {
		t.Fatalf("NextLSN %d: the refused records must not be logged", rep.NextLSN)
	}
	got := replayAll(t, l, 0)
	for i, r := range got {
		if !bytes.Equal(r.rec, recs[i]) {
			t.Fatalf("record %d differs (len %d vs %d)", i, len(r.rec), len(recs[i]))
		}
	}
}

func TestAppendBatchAndRotate(t *testing.T) {
	fs := vfs.NewMemFS()
	opts := Options{FS: fs, Dir: "/log"}
	l, _ := mustOpen(t, opts)
	first, err := l.AppendBatch([][]byte{[]byte("a"), []byte("b"), []byte("c")})
	if err != nil || first != 1 {
		t.Fatalf("AppendBatch: %d %v", first, err)
	}
	r1, err := l.Rotate()
	if err != nil || r1 != 4 {
		t.Fatalf("Rotate: %d %v", r1, err)
	}
	// Rotating an empty segment keeps it.
	r2, err := l.Rotate()
	if err != nil || r2 != 4 {
		t.Fatalf("second Rotate: %d %v", r2, err)
	}
	if st := l.Stats(); st.Segments != 2 {
		t.Fatalf("segments %d, want 2", st.Segments)
	}
	if lsn, err := l.Append([]byte("d")); err != nil || lsn != 4 {
		t.Fatalf("Append after Rotate: %d %v", lsn, err)
	}
	got := replayAll(t, l, r1)
	if len(got) != 1 || string(got[0].rec) != "d" {
		t.Fatalf("replay from rotate point: %+v", got)
	}
	mustClose(t, l)
	if err := l.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := l.Append(nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close: %v", err)
	}
}

func TestRemoveBefore(t *testing.T) {
	fs := vfs.NewMemFS()
	opts := Options{FS: fs, Dir: "/log"}
	l, _ := mustOpen(t, opts)
	var cuts []LSN
	for s := 0; s < 4; s++ {
		for i := 0; i < 10; i++ {
			if _, err := l.Append(payload(s*10 + i)); err != nil {
				t.Fatal(err)
			}
		}
		c, err := l.Rotate()
		if err != nil {
			t.Fatal(err)
		}
		cuts = append(cuts, c) // 11, 21, 31, 41
	}
	// Segments: [1,11) [11,21) [21,31) [31,41) [41,...)
	if err := l.RemoveBefore(25); err != nil { // only whole segments below 25
		t.Fatal(err)
	}
	names, _ := fs.List("/log")
	if len(names) != 3 {
		t.Fatalf("after RemoveBefore(25): %v", names)
	}
	got := replayAll(t, l, 21)
	if len(got) != 20 || got[0].lsn != 21 {
		t.Fatalf("replay from 21 after RemoveBefore(25): %d records", len(got))
	}
	if err := l.Replay(11, func(LSN, []byte) error { return nil }); !errors.Is(err, ErrCompacted) {
		t.Fatalf("replay of removed records: %v", err)
	}
	// Removing everything keeps the active segment.
	if err := l.RemoveBefore(1 << 40); err != nil {
		t.Fatal(err)
	}
	if st := l.Stats(); st.Segments != 1 {
		t.Fatalf("segments %d after removing all", st.Segments)
	}
	mustClose(t, l)
	// Durable: a crash keeps the removal, and the log reopens from 41.
	crashed := fs.Crash(vfs.DropUnsynced, nil)
	l, rep := mustOpen(t, Options{FS: crashed, Dir: "/log"})
	defer mustClose(t, l)
	if rep.FirstLSN != cuts[3] || rep.NextLSN != cuts[3] {
		t.Fatalf("report after compaction %+v", rep)
	}
	if lsn, err := l.Append([]byte("x")); err != nil || lsn != cuts[3] {
		t.Fatalf("append: %d %v", lsn, err)
	}
}

func TestReplayStopsOnCallbackError(t *testing.T) {
	l, _ := mustOpen(t, Options{FS: vfs.NewMemFS(), Dir: "/log"})
	defer mustClose(t, l)
	for i := 0; i < 5; i++ {
		l.Append(payload(i))
	}
	stop := errors.New("stop")
	calls := 0
	err := l.Replay(0, func(LSN, []byte) error { calls++; return stop })
	if err != stop || calls != 1 {
		t.Fatalf("Replay returned %v after %d calls", err, calls)
	}
}

func TestParseSyncPolicy(t *testing.T) {
	for _, p := range []SyncPolicy{SyncAlways, SyncInterval, SyncNone} {
		got, err := ParseSyncPolicy(p.String())
		if err != nil || got != p {
			t.Fatalf("ParseSyncPolicy(%q) = %v, %v", p.String(), got, err)
		}
	}
	if _, err := ParseSyncPolicy("sometimes"); err == nil {
		t.Fatal("bad policy accepted")
	}
	if SyncPolicy(0) != SyncAlways {
		t.Fatal("zero value must be SyncAlways")
	}
}
