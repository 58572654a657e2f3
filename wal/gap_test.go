package wal

import (
	"errors"
	"math/rand"
	"slices"
	"testing"

	"github.com/memrl/memrl/vfs"
)

// A log that ends below From (here: 20 records, From 50) is refused with a
// *GapError and nothing changes on disk; accepted, it restarts at From, so
// that records appended afterwards replay from From, also after a crash.
// Before, Open numbered them from 21: a replay from 50 skipped them all.
func TestOpenGapEndsBelowFrom(t *testing.T) {
	fs, opts := buildLog(t, 20, 1024)
	before, _ := fs.List("/log")
	opts.From = 50
	_, _, err := Open(opts)
	var g *GapError
	if !errors.As(err, &g) || !errors.Is(err, ErrGap) {
		t.Fatalf("Open of a log ending below From: %v, want a *GapError", err)
	}
	if g.From != 50 || g.First != 1 || g.Next != 21 {
		t.Fatalf("gap %+v, want From 50, First 1, Next 21", *g)
	}
	if first, last := g.Missing(); first != 50 || last != 0 {
		t.Fatalf("Missing() = %d, %d", first, last)
	}
	if after, _ := fs.List("/log"); !slices.Equal(before, after) {
		t.Fatalf("the refused Open changed the directory: %v, then %v", before, after)
	}
	opts.AcceptGap = func(*GapError) bool { return false }
	if _, _, err := Open(opts); !errors.Is(err, ErrGap) {
		t.Fatalf("AcceptGap refusing: %v", err)
	}

	opts.AcceptGap = func(*GapError) bool { return true }
	l, rep := mustOpen(t, opts)
	if rep.Gap == nil || rep.FirstLSN != 50 || rep.NextLSN != 50 {
		t.Fatalf("accepted gap: report %+v", rep)
	}
	for i := 0; i < 5; i++ {
		lsn, err := l.Append(payload(i))
		if err != nil {
			t.Fatal(err)
		}
		if want := LSN(50 + i); lsn != want {
			t.Fatalf("record %d appended at LSN %d, want %d", i, lsn, want)
		}
	}
	crashed := fs.Crash(vfs.DropUnsynced, rand.New(rand.NewSource(1)))
	mustClose(t, l)
	opts.FS, opts.AcceptGap = crashed, nil
	l2, rep2 := mustOpen(t, opts) // whole from 50 now: no gap
	defer mustClose(t, l2)
	if rep2.Gap != nil {
		t.Fatalf("gap after the restart: %v", rep2.Gap)
	}
	if got := replayAll(t, l2, 50); len(got) != 5 || got[0].lsn != 50 {
		t.Fatalf("replay from 50 after the crash: %d records (first %+v), want 5 from LSN 50", len(got), got)
	}
}

// The same with wal/ emptied: no segment at all.
func TestOpenGapEmptyLog(t *testing.T) {
	fs := vfs.NewMemFS()
	opts := Options{FS: fs, Dir: "/log", From: 7}
	if _, _, err := Open(opts); !errors.Is(err, ErrGap) {
		t.Fatalf("empty log, From 7: %v", err)
	}
	opts.AcceptGap = func(g *GapError) bool { return g.First == g.Next }
	l, rep := mustOpen(t, opts)
	defer mustClose(t, l)
	if lsn, err := l.Append([]byte("x")); err != nil || lsn != 7 || rep.NextLSN != 7 {
		t.Fatalf("first record at %d (%v), report next %d; want 7", lsn, err, rep.NextLSN)
	}
}

// A log whose oldest segments are gone starts above From: refused, and
// accepted, it is kept as it is.
func TestOpenGapStartsAboveFrom(t *testing.T) {
	fs, opts := buildLog(t, 40, 1024)
	names, _ := fs.List("/log")
	if len(names) < 3 {
		t.Fatalf("want 3 segments or more, have %v", names)
	}
	if err := fs.Remove(segPath(1)); err != nil {
		t.Fatal(err)
	}
	opts.From = 1
	_, _, err := Open(opts)
	var g *GapError
	if !errors.As(err, &g) || g.First <= 1 || g.Next != 41 {
		t.Fatalf("Open with the first segment gone: %v", err)
	}
	if first, last := g.Missing(); first != 1 || last != g.First-1 {
		t.Fatalf("Missing() = %d, %d", first, last)
	}
	opts.AcceptGap = func(*GapError) bool { return true }
	l, rep := mustOpen(t, opts)
	defer mustClose(t, l)
	if rep.Gap == nil || rep.FirstLSN != g.First || rep.NextLSN != 41 {
		t.Fatalf("accepted: report %+v", rep)
	}
	if got := replayAll(t, l, rep.FirstLSN); len(got) != int(41-g.First) {
		t.Fatalf("replayed %d records, want %d", len(got), 41-g.First)
	}
}

// A log that reaches back to From is no gap, wherever From falls in it.
func TestOpenNoGap(t *testing.T) {
	fs, opts := buildLog(t, 20, 1024)
	for _, from := range []LSN{0, 1, 10, 21} {
		opts.FS, opts.From = fs, from
		l, rep := mustOpen(t, opts)
		if rep.Gap != nil {
			t.Fatalf("From %d: gap %v", from, rep.Gap)
		}
		mustClose(t, l)
	}
}
