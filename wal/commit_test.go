package wal

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/memrl/memrl/vfs"
)

func TestGroupCommitBatchesFsyncs(t *testing.T) {
	fs := vfs.NewMemFS()
	fs.SetSyncDelay(500 * time.Microsecond) // fsyncs take time, as on a disk
	l, _ := mustOpen(t, Options{FS: fs, Dir: "/log"})
	defer mustClose(t, l)
	base := l.Stats()

	const goroutines, each = 64, 20
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if _, err := l.Append([]byte(fmt.Sprintf("g%d-%d", g, i))); err != nil {
					errs <- err
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st := l.Stats()
	records, syncs := st.Records-base.Records, st.Syncs-base.Syncs
	t.Logf("%d records, %d fsyncs (%.1f records/fsync), %d writes", records, syncs, float64(records)/float64(syncs), st.Writes-base.Writes)
	if records != goroutines*each {
		t.Fatalf("records %d", records)
	}
	// With 64 appenders waiting on each fsync, batches are large; demand
	// at least 8 records per fsync on average (sequential would be 1).
	if syncs == 0 || syncs > records/8 {
		t.Fatalf("%d fsyncs for %d records: group commit is not batching", syncs, records)
	}
	got := replayAll(t, l, 0)
	if len(got) != goroutines*each {
		t.Fatalf("replayed %d", len(got))
	}
}

func TestSyncAlwaysEachAppendIsFsynced(t *testing.T) {
	fs := vfs.NewMemFS()
	l, _ := mustOpen(t, Options{FS: fs, Dir: "/log"})
	for i := 0; i < 5; i++ {
		if _, err := l.Append(payload(i)); err != nil {
			t.Fatal(err)
		}
		// Every acknowledged record survives a crash that drops all
		// unsynced state.
		c := fs.Crash(vfs.DropUnsynced, nil)
		l2, rep := mustOpen(t, Options{FS: c, Dir: "/log"})
		if rep.NextLSN != LSN(i+2) {
			t.Fatalf("after %d acknowledged appends the crashed log has NextLSN %d", i+1, rep.NextLSN)
		}
		mustClose(t, l2)
	}
	mustClose(t, l)
}

func TestFailedFsyncIsSticky(t *testing.T) {
	fs := vfs.NewMemFS()
	l, _ := mustOpen(t, Options{FS: fs, Dir: "/log"})
	if _, err := l.Append([]byte("ok")); err != nil {
		t.Fatal(err)
	}
	fs.FailNextSync(".wal")
	_, err := l.Append([]byte("fails"))
	if !errors.Is(err, ErrFailed) || !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("failing Append returned %v", err)
	}
	// The fault was one-shot: the FS would now succeed, but the log must
	// not retry or acknowledge anything.
	for i := 0; i < 3; i++ {
		if _, err := l.Append([]byte("later")); !errors.Is(err, ErrFailed) {
			t.Fatalf("Append after failure returned %v", err)
		}
	}
	if err := l.Sync(); !errors.Is(err, ErrFailed) {
		t.Fatalf("Sync after failure: %v", err)
	}
	if _, err := l.Rotate(); !errors.Is(err, ErrFailed) {
		t.Fatalf("Rotate after failure: %v", err)
	}
	if err := l.RemoveBefore(1); !errors.Is(err, ErrFailed) {
		t.Fatalf("RemoveBefore after failure: %v", err)
	}
	if !errors.Is(l.Err(), ErrFailed) {
		t.Fatalf("Err() = %v", l.Err())
	}
	if err := l.Close(); !errors.Is(err, ErrFailed) {
		t.Fatalf("Close after failure: %v", err)
	}
	// What was acknowledged is durable.
	c := fs.Crash(vfs.DropUnsynced, nil)
	l2, _ := mustOpen(t, Options{FS: c, Dir: "/log"})
	defer mustClose(t, l2)
	got := replayAll(t, l2, 0)
	if len(got) < 1 || string(got[0].rec) != "ok" {
		t.Fatalf("acknowledged record lost: %+v", got)
	}
	for _, r := range got {
		if string(r.rec) == "later" {
			t.Fatal("a record appended after the failure was logged")
		}
	}
}

func TestFailedWriteIsSticky(t *testing.T) {
	for _, pol := range []SyncPolicy{SyncAlways, SyncInterval} {
		t.Run(pol.String(), func(t *testing.T) {
			fs := vfs.NewMemFS()
			l, _ := mustOpen(t, Options{FS: fs, Dir: "/log", Sync: pol})
			fs.FailNextWrite(".wal")
			if _, err := l.Append([]byte("x")); !errors.Is(err, ErrFailed) {
				t.Fatalf("Append with failing write: %v", err)
			}
			if _, err := l.Append([]byte("y")); !errors.Is(err, ErrFailed) {
				t.Fatalf("later Append: %v", err)
			}
			l.Close()
		})
	}
}

func TestFailedFsyncFailsAllWaiters(t *testing.T) {
	fs := vfs.NewMemFS()
	fs.SetSyncDelay(200 * time.Microsecond)
	l, _ := mustOpen(t, Options{FS: fs, Dir: "/log"})
	var mu sync.Mutex
	acked := map[string]LSN{}
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			failed := false
			for i := 0; i < 50; i++ {
				rec := fmt.Sprintf("g%d-%d", g, i)
				lsn, err := l.Append([]byte(rec))
				if err != nil {
					failed = true
					continue
				}
				if failed {
					t.Errorf("Append %s succeeded after a failure", rec)
				}
				mu.Lock()
				acked[rec] = lsn
				mu.Unlock()
			}
		}(g)
		if g == 8 {
			fs.FailNextSync(".wal")
		}
	}
	wg.Wait()
	if l.Err() == nil {
		t.Fatal("log did not fail")
	}
	l.Close()
	c := fs.Crash(vfs.DropUnsynced, nil)
	l2, _ := mustOpen(t, Options{FS: c, Dir: "/log"})
	defer mustClose(t, l2)
	present := map[string]LSN{}
	for _, r := range replayAll(t, l2, 0) {
		present[string(r.rec)] = r.lsn
	}
	for rec, lsn := range acked {
		if present[rec] != lsn {
			t.Fatalf("acknowledged %s (LSN %d) missing after crash", rec, lsn)
		}
	}
}

func TestSyncIntervalTimerFsyncs(t *testing.T) {
	fs := vfs.NewMemFS()
	l, _ := mustOpen(t, Options{FS: fs, Dir: "/log", Sync: SyncInterval, SyncInterval: time.Millisecond})
	defer mustClose(t, l)
	if _, err := l.Append([]byte("x")); err != nil {
		t.Fatal(err)
	}
	// Written to the "OS" at once:
	if st := l.Stats(); st.Writes == 0 {
		t.Fatal("SyncInterval Append returned before writing")
	}
	// Without any Sync call, the timer makes it durable.
	deadline := time.Now().Add(5 * time.Second)
	for {
		c := fs.Crash(vfs.DropUnsynced, nil)
		l2, rep := mustOpen(t, Options{FS: c, Dir: "/log"})
		mustClose(t, l2)
		if rep.NextLSN == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("interval timer never fsynced")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestSyncNoneSurvivesProcessCrash (issue 14): SyncNone used to keep small
// records in memory until 1 MiB had accumulated, so a plain kill -9 of the
// process lost acknowledged writes. Like Redis's appendfsync no, every
// acknowledged record is now in the operating system's file (MemFS's
// written-but-unsynced state, which survives the process but not the
// machine), without any fsync.
func TestSyncNoneSurvivesProcessCrash(t *testing.T) {
	fs := vfs.NewMemFS()
	l, _ := mustOpen(t, Options{FS: fs, Dir: "/log", Sync: SyncNone})
	syncs := l.Stats().Syncs
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				if _, err := l.Append(payload(10*g + i)); err != nil {
					t.Error(err)
				}
			}
		}(g)
	}
	wg.Wait()
	if st := l.Stats(); st.Writes == 0 || st.Syncs != syncs {
		t.Fatalf("SyncNone after 40 appends: %d writes, %d fsyncs (%d at open); want writes and no fsync", st.Writes, st.Syncs, syncs)
	}
	// The process dies: l is abandoned, never synced or closed, and a new
	// process opens the same files through the same operating system.
	l2, rep := mustOpen(t, Options{FS: fs, Dir: "/log"})
	defer mustClose(t, l2)
	if rep.NextLSN != 41 {
		t.Fatalf("after a process crash, NextLSN %d, want 41", rep.NextLSN)
	}
	got := map[string]bool{}
	for _, r := range replayAll(t, l2, 1) {
		got[string(r.rec)] = true
	}
	for i := 0; i < 40; i++ {
		if !got[string(payload(i))] {
			t.Fatalf("acknowledged record %d lost by a process crash", i)
		}
	}
}

func TestConcurrentAppendRotateRemoveReplay(t *testing.T) {
	fs := vfs.NewMemFS()
	l, _ := mustOpen(t, Options{FS: fs, Dir: "/log", Sync: SyncInterval, SegmentSize: 4096})
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 300; i++ {
				if _, err := l.Append(payload(i)); err != nil {
					t.Error(err)
					return
				}
			}
		}(g)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 20; i++ {
			lsn, err := l.Rotate()
			if err != nil {
				t.Error(err)
				return
			}
			if err := l.Replay(lsn, func(LSN, []byte) error { return nil }); err != nil {
				t.Error(err)
				return
			}
			if err := l.RemoveBefore(lsn); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	wg.Wait()
	mustClose(t, l)
	l, _ = mustOpen(t, Options{FS: fs, Dir: "/log"})
	mustClose(t, l)
}
