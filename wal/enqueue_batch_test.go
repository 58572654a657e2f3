package wal

import (
	"bytes"
	"errors"
	"testing"

	"github.com/memrl/memrl/vfs"
)

// TestEnqueueBatchOneFsync: a batch of records larger than the flush
// threshold, enqueued at once, is written with one fsync, gets consecutive
// LSNs, and replays in order after a reopen.
func TestEnqueueBatchOneFsync(t *testing.T) {
	fs := vfs.NewMemFS()
	l, _ := mustOpen(t, Options{FS: fs, Dir: "wal"})
	var recs [][]byte
	for i := 0; i < 1000; i++ {
		recs = append(recs, append(payload(i), bytes.Repeat([]byte{'x'}, 2000)...))
	}
	before := l.Stats().Syncs
	first := l.NextLSN()
	last, err := l.EnqueueBatch(recs)
	if err != nil {
		t.Fatal(err)
	}
	if want := first + LSN(len(recs)) - 1; last != want {
		t.Fatalf("last LSN %d, want %d", last, want)
	}
	if err := l.WaitDurable(last); err != nil {
		t.Fatal(err)
	}
	if got := l.Stats().Syncs - before; got != 1 {
		t.Fatalf("%d fsyncs for one batch, want 1", got)
	}
	mustClose(t, l)
	l, _ = mustOpen(t, Options{FS: fs, Dir: "wal"})
	defer mustClose(t, l)
	got := replayAll(t, l, first)
	if len(got) != len(recs) {
		t.Fatalf("replayed %d records, want %d", len(got), len(recs))
	}
	for i, r := range got {
		if r.lsn != first+LSN(i) || !bytes.Equal(r.rec, recs[i]) {
			t.Fatalf("record %d: lsn %d, %d bytes; want lsn %d, %d bytes", i, r.lsn, len(r.rec), first+LSN(i), len(recs[i]))
		}
	}
}

// TestEnqueueBatchAllOrNothing: one record over MaxRecordSize refuses the
// whole batch; an empty batch appends nothing.
func TestEnqueueBatchAllOrNothing(t *testing.T) {
	l, _ := mustOpen(t, Options{FS: vfs.NewMemFS(), Dir: "wal"})
	defer mustClose(t, l)
	next := l.NextLSN()
	_, err := l.EnqueueBatch([][]byte{payload(1), make([]byte, MaxRecordSize+1)})
	if !errors.Is(err, ErrRecordTooLarge) {
		t.Fatalf("got %v, want ErrRecordTooLarge", err)
	}
	if lsn, err := l.EnqueueBatch(nil); lsn != 0 || err != nil {
		t.Fatalf("empty batch: %d, %v", lsn, err)
	}
	if l.NextLSN() != next {
		t.Fatalf("NextLSN moved from %d to %d: something was appended", next, l.NextLSN())
	}
}
