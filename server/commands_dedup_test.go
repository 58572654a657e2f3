package server

import "testing"

// TestMemAddDedup: MEM.ADD … DEDUP s [MERGE KEEP|MAX|AVG] over the
// protocol, and its bad input.
func TestMemAddDedup(t *testing.T) {
	ts, _ := startMem(t)
	rdb := ts.client(t)
	mustDo(t, rdb, "MEM.CREATE", "c", "DIM", 2, "METRIC", "COSINE")
	mustDo(t, rdb, "MEM.ADD", "c", "VALUES", 2, 1, 0, "Q", 0.2)
	if id := mustDo(t, rdb, "MEM.ADD", "c", "VALUES", 2, 1, 0.001, "DEDUP", 0.99, "Q", 0.8, "MERGE", "max"); id != int64(1) {
		t.Fatalf("MEM.ADD DEDUP of a near-copy = %v, want 1", id)
	}
	if g := getFields(t, rdb, "c", 1); g["q"] != "0.8" {
		t.Fatalf("q after MERGE MAX = %v", g["q"])
	}
	if id := mustDo(t, rdb, "MEM.ADD", "c", "VALUES", 2, 0, 1, "DEDUP", 0.99); id != int64(2) {
		t.Fatalf("MEM.ADD DEDUP of a new direction = %v, want 2", id)
	}
	wantErr(t, rdb, "MERGE needs DEDUP", "MEM.ADD", "c", "VALUES", 2, 1, 0, "MERGE", "MAX")
	wantErr(t, rdb, "MERGE must be KEEP, MAX or AVG", "MEM.ADD", "c", "VALUES", 2, 1, 0, "DEDUP", 0.9, "MERGE", "MIN")
	wantErr(t, rdb, "DEDUP is for single adds", "MEM.MADD", "c", "VALUES", 2, 1, 0, "VALUES", 2, 1, 0, "DEDUP", 0.9)
	// A batch of one is a batch too: refused, not deduplicated.
	wantErr(t, rdb, "DEDUP is for single adds", "MEM.MADD", "c", "VALUES", 2, 1, 0.001, "DEDUP", 0.99)
	wantErr(t, rdb, "DEDUP is for single adds", "MEM.MADD", "c", "VALUES", 2, 1, 0.001, "DEDUP", 0.99, "MERGE", "MAX")
	wantErr(t, rdb, "DEDUP", "MEM.ADD", "c", "VALUES", 2, 1, 0, "DEDUP", "nan")
	if n := mustDo(t, rdb, "MEM.COUNT", "c"); n != int64(2) {
		t.Fatalf("MEM.COUNT = %v, want 2", n)
	}
}
