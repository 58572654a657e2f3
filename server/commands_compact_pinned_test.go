package server

import (
	"testing"

	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/vfs"
	"github.com/memrl/memrl/wal"
)

// TestMemInfoPinnedRows: MEM.INFO's deleted_rows counts the rows a
// compaction would free, not those a snapshot pins; pinned_rows counts
// those.
func TestMemInfoPinnedRows(t *testing.T) {
	db, err := engine.Open("/db", engine.Options{FS: vfs.NewMemFS(), Sync: wal.SyncAlways, CheckpointInterval: -1,
		CheckpointBytes: -1, CompactShare: -1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ts := startServer(t, Config{}, func(s *Server) { s.RegisterMem(db) })
	rdb := ts.client(t)
	mustDo(t, rdb, "MEM.CREATE", "m", "DIM", 2, "METRIC", "L2")
	for i := 1; i <= 10; i++ {
		mustDo(t, rdb, "MEM.ADD", "m", "VALUES", 2, i, 0)
	}
	mustDo(t, rdb, "MEM.SNAPSHOT", "m", "s")
	for i := 1; i <= 4; i++ {
		mustDo(t, rdb, "MEM.DEL", "m", i)
	}
	mustDo(t, rdb, "MEM.ADD", "m", "VALUES", 2, 11, 0)
	mustDo(t, rdb, "MEM.DEL", "m", 11) // added after the snapshot: not pinned
	info := mustDo(t, rdb, "MEM.INFO", "m")
	if field(t, info, "deleted_rows") != int64(1) || field(t, info, "pinned_rows") != int64(4) {
		t.Fatalf("MEM.INFO: %v", info)
	}
}
