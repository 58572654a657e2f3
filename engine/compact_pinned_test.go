package engine

import (
	"testing"

	"github.com/memrl/memrl/vfs"
	"github.com/memrl/memrl/wal"
)

// TestCompactNotDueForPinnedRows: dead rows a snapshot pins are no reason
// to compact (a compaction would copy them all and free nothing), neither
// before nor after a restart, nor after a compaction that kept them; rows
// a compaction can free still are. DeletedRows counts only the latter,
// PinnedRows the former.
func TestCompactNotDueForPinnedRows(t *testing.T) {
	fs := vfs.NewMemFS()
	opts := Options{FS: fs, Sync: wal.SyncAlways, CheckpointInterval: -1, CompactShare: -1, Logf: t.Logf}
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { db.Close() }()
	c := mustColl(t, db, "c", flatCfg)
	for i := 1; i <= 100; i++ {
		add(t, c, uint64(i), 0, 1, 2, 3, 4, 5, 6, 7, float32(i))
	}
	if err := c.Snapshot("s"); err != nil {
		t.Fatal(err)
	}
	var del []uint64
	for i := 1; i <= 60; i++ {
		del = append(del, uint64(i))
	}
	if _, err := c.Delete(del); err != nil {
		t.Fatal(err)
	}
	want := func(when string, c *Collection, due bool, deleted, pinned uint64) {
		t.Helper()
		if got := c.compactDue(0.3, 10); got != due {
			t.Errorf("%s: compactDue = %v, want %v", when, got, due)
		}
		if got := c.DeletedRows(); got != deleted {
			t.Errorf("%s: DeletedRows = %d, want %d", when, got, deleted)
		}
		if got := c.PinnedRows(); got != pinned {
			t.Errorf("%s: PinnedRows = %d, want %d", when, got, pinned)
		}
	}
	want("all 60 dead rows pinned", c, false, 0, 60)

	db.Close()
	if db, err = Open("/db", opts); err != nil {
		t.Fatal(err)
	}
	c = collOf(t, db, "c")
	want("after a restart", c, false, 0, 60)

	if _, err := c.Compact(); err != nil {
		t.Fatal(err)
	}
	want("after a compaction that kept them", c, false, 0, 60)
	db.Close()
	if db, err = Open("/db", opts); err != nil {
		t.Fatal(err)
	}
	c = collOf(t, db, "c")
	want("after the compaction and a restart", c, false, 0, 60)

	// Rows no snapshot pins are reclaimable: 40 added after the snapshot
	// and deleted.
	for i := 101; i <= 140; i++ {
		add(t, c, uint64(i), 0, 1, 2, 3, 4, 5, 6, 7, float32(i))
	}
	del = del[:0]
	for i := 101; i <= 140; i++ {
		del = append(del, uint64(i))
	}
	if _, err := c.Delete(del); err != nil {
		t.Fatal(err)
	}
	want("40 unpinned dead rows of 140", c, false, 40, 60)
	if err := c.Snapshot("t"); err != nil { // pins nothing more: 61..100 live
		t.Fatal(err)
	}
	if _, err := c.Delete([]uint64{61, 62, 63, 64, 65}); err != nil {
		t.Fatal(err)
	}
	want("5 more, pinned", c, false, 40, 65)
	if _, err := c.DeleteSnapshot("s"); err != nil {
		t.Fatal(err)
	}
	// 1..60 freed: 100 of 140 rows reclaimable.
	want("the first snapshot deleted", c, true, 100, 5)
}

func collOf(t *testing.T, db *DB, name string) *Collection {
	t.Helper()
	c, err := db.Collection(name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCompactFreeingNothingDoesNotRun: a compaction that would free
// nothing (every dead row pinned, no payload bytes unused) returns at once
// without writing a generation; one that would free payload bytes runs.
func TestCompactFreeingNothingDoesNotRun(t *testing.T) {
	_, c := pinnedFixture(t)
	if _, err := c.Compact(); err != nil { // frees the 20 unpinned rows
		t.Fatal(err)
	}
	gen := func() uint64 {
		c.mu.RLock()
		defer c.mu.RUnlock()
		return c.gen
	}
	g := gen()
	st, err := c.Compact()
	if err != nil {
		t.Fatal(err)
	}
	if gen() != g || st.RowsAfter != st.RowsBefore || st.BytesAfter != st.BytesBefore {
		t.Fatalf("a compaction that frees nothing ran: generation %d -> %d, %+v", g, gen(), st)
	}
	if err := c.SetPayload(ByID(70), []byte("replaced")); err != nil {
		t.Fatal(err)
	}
	st, err = c.Compact()
	if err != nil {
		t.Fatal(err)
	}
	if gen() != g+1 || st.BytesAfter >= st.BytesBefore {
		t.Fatalf("a compaction freeing a replaced payload: generation %d -> %d, %+v", g, gen(), st)
	}
	if mi, err := c.Get(70); err != nil || string(mi.Payload) != "replaced" {
		t.Fatalf("memory 70 after the compaction: %+v, %v", mi, err)
	}
}
