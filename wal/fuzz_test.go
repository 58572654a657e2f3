package wal

import (
	"errors"
	"testing"

	"github.com/memrl/memrl/vfs"
)

// FuzzOpenDamagedSegment damages a valid two-segment log at a fuzzed
// place and checks that Open never panics, and either refuses the log
// with a *CorruptionError (changing nothing) or opens it and replays a
// prefix of what was written: a dense sequence of records from LSN 1,
// each the record written with its LSN. Cutting the last segment short
// (a torn tail) is never refused.
func FuzzOpenDamagedSegment(f *testing.F) {
	f.Add(uint16(100), uint16(3), []byte{0xff})
	f.Add(uint16(2000), uint16(0), []byte{})
	f.Add(uint16(5), uint16(1), []byte{0, 0, 0, 0, 0, 0, 0, 0})
	f.Add(uint16(65535), uint16(2), []byte("garbage tail"))
	f.Fuzz(fuzzBody)
}

func fuzzBody(t *testing.T, off uint16, op uint16, data []byte) {
	{
		fs := vfs.NewMemFS()
		opts := Options{FS: fs, Dir: "/log", SegmentSize: 1024}
		l, _, err := Open(opts)
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= 20; i++ {
			if _, err := l.Append(payload(i)); err != nil {
				t.Fatal(err)
			}
		}
		l.Close()
		names, _ := fs.List("/log")
		last := op%2 == 0
		path := "/log/" + names[len(names)-1-int(op)%2]
		size := int64(len(fileBytes(t, fs, path)))
		at := int64(off) % (size + 1)
		switch op % 3 {
		case 0: // overwrite
			patch(t, fs, path, at, data)
		case 1: // truncate
			truncateFile(t, fs, path, at)
		case 2: // append
			patch(t, fs, path, size, data)
		}
		before := snapshot(t, fs)
		l, rep, err := Open(opts)
		var ce *CorruptionError
		if errors.As(err, &ce) {
			if last && op%3 == 1 {
				t.Fatalf("torn tail of the last segment at %d refused: %v", at, err)
			}
			after := snapshot(t, fs)
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
		defer l.Close()
		if rep.FirstLSN != 1 {
			t.Fatalf("report %+v: recovered records do not start at LSN 1", rep)
		}
		i := 0
		err = l.Replay(rep.FirstLSN, func(lsn LSN, rec []byte) error {
			if lsn != rep.FirstLSN+LSN(i) || string(rec) != string(payload(int(lsn))) {
				t.Fatalf("replayed LSN %d = %q", lsn, rec)
			}
			i++
			return nil
		})
		if err != nil || LSN(i) != rep.NextLSN-rep.FirstLSN {
			t.Fatalf("replay: %v, %d records, report %+v", err, i, rep)
		}
	}
}
