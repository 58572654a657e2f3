package engine

import (
	"math"
	"testing"

	"github.com/memrl/memrl/internal/histo"
)

func TestStatsAccessors(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, Options{CheckpointInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if db.Dir() != dir {
		t.Fatalf("Dir = %q", db.Dir())
	}
	for _, name := range []string{"b", "a"} {
		if err := db.Create(name, NewConfig(4)); err != nil {
			t.Fatal(err)
		}
	}
	a, _ := db.Collection("a")
	var ids []uint64
	for i, q := range []float64{1, 2, 3, 4} {
		id, err := a.Add(AddRequest{Vector: []float32{1, float32(i), 0, 0}, Q: q, HasQ: true, Payload: []byte("xyz")})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if _, err := a.Delete(ids[3:]); err != nil { // Q 1, 2, 3 remain
		t.Fatal(err)
	}
	st := db.CollectionStats()
	if len(st) != 2 || st[0].Name != "a" || st[1].Name != "b" {
		t.Fatalf("CollectionStats = %+v", st)
	}
	s := st[0]
	if s.Memories != 3 || s.DeadRows != 1 || s.Rows != 4 || s.Index != "flat" || s.Dim != 4 || s.PayloadSize != 4*(3+payloadSumSize) {
		t.Fatalf("stats of a = %+v", s)
	}
	if math.Abs(s.QMean-2) > 1e-12 || math.Abs(s.QStd-math.Sqrt(2.0/3)) > 1e-12 {
		t.Fatalf("Q mean %v std %v, want 2 and sqrt(2/3)", s.QMean, s.QStd)
	}
	if s.MappedBytes < 4*4*4 {
		t.Fatalf("MappedBytes = %d, the file holds 4 rows of 16 bytes", s.MappedBytes)
	}
	if got := db.MappedBytes(); got != st[0].MappedBytes+st[1].MappedBytes {
		t.Fatalf("MappedBytes = %d, collections map %d and %d", got, st[0].MappedBytes, st[1].MappedBytes)
	}
	if st[1].Memories != 0 || st[1].QMean != 0 {
		t.Fatalf("empty collection b = %+v", st[1])
	}
	ws := db.WALStats()
	// 2 creates, 4 adds, 1 delete, each waited for under SyncAlways.
	if ws.Records < 7 || ws.Syncs == 0 || ws.DiskBytes <= 0 || ws.Segments < 1 {
		t.Fatalf("WALStats = %+v", ws)
	}
	var h histo.Snapshot
	db.WALSyncLatency(&h)
	if h.Count != ws.Syncs {
		t.Fatalf("fsync histogram holds %d, Syncs %d", h.Count, ws.Syncs)
	}
}
