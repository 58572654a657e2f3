package wal

import (
	"bytes"
	"math/rand"
	"sync"
	"testing"
	"time"

	"github.com/memrl/memrl/vfs"
)

// TestEnqueueWaitDurable: records enqueued under a caller's lock by many
// goroutines and acknowledged after WaitDurable are all there, in the
// enqueued order, after a crash that drops every unsynced byte; and
// concurrent waiters share fsyncs.
func TestEnqueueWaitDurable(t *testing.T) {
	for _, mode := range []vfs.CrashMode{vfs.DropUnsynced, vfs.KeepRandomPrefix, vfs.TearLastSector} {
		t.Run(mode.String(), func(t *testing.T) {
			fs := vfs.NewMemFS()
			// An fsync takes time on a real disk, and group commit is
			// what writers arriving meanwhile share. With instant syncs
			// the flusher may keep up with 32 writers one record at a
			// time, and the test below would measure nothing.
			fs.SetSyncDelay(200 * time.Microsecond)
			l, _ := mustOpen(t, Options{FS: fs, Dir: "wal", SegmentSize: 4096})
			var (
				mu    sync.Mutex // the caller's lock: log order = this order
				order [][]byte
				acked sync.Map // LSN -> record
				wg    sync.WaitGroup
			)
			const workers, each = 32, 30
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					for i := 0; i < each; i++ {
						rec := payload(w*each + i)
						mu.Lock()
						lsn, err := l.Enqueue(rec)
						if err != nil {
							mu.Unlock()
							t.Error(err)
							return
						}
						order = append(order, rec)
						mu.Unlock()
						if err := l.WaitDurable(lsn); err != nil {
							t.Error(err)
							return
						}
						acked.Store(lsn, rec)
					}
				}(w)
			}
			wg.Wait()
			st := l.Stats()
			if st.Syncs >= workers*each/2 {
				t.Errorf("%d fsyncs for %d records: no group commit", st.Syncs, workers*each)
			}
			crashed := fs.Crash(mode, rand.New(rand.NewSource(7)))
			l2, _ := mustOpen(t, Options{FS: crashed, Dir: "wal", SegmentSize: 4096})
			defer mustClose(t, l2)
			got := replayAll(t, l2, 0)
			for i, r := range got {
				if r.lsn != LSN(i+1) || !bytes.Equal(r.rec, order[i]) {
					t.Fatalf("record %d: lsn %d, out of enqueued order", i, r.lsn)
				}
			}
			acked.Range(func(k, v any) bool {
				lsn := k.(LSN)
				if int(lsn) > len(got) {
					t.Fatalf("acknowledged record %d lost (%d survived)", lsn, len(got))
				}
				return true
			})
			l.Close()
		})
	}
}

func TestWaitDurableAfterFailure(t *testing.T) {
	fs := vfs.NewMemFS()
	l, _ := mustOpen(t, Options{FS: fs, Dir: "wal"})
	defer l.Close()
	lsn, err := l.Enqueue([]byte("ok"))
	if err != nil || l.WaitDurable(lsn) != nil {
		t.Fatal("first record", err)
	}
	fs.FailNextSync("")
	lsn, _ = l.Enqueue([]byte("doomed"))
	if err := l.WaitDurable(lsn); err == nil {
		t.Fatal("record acknowledged despite failed fsync")
	}
	if _, err := l.Enqueue([]byte("after")); err == nil {
		t.Fatal("Enqueue after a failed fsync succeeded")
	}
	if err := l.WaitDurable(lsn); err == nil {
		t.Fatal("WaitDurable of the failed record succeeded later")
	}
}
