package server

import "testing"

// TestMemRetrieveRawQ: MEM.RETRIEVE … RAWQ ranks phase 2 by raw Q (the
// z-normalisation ablation): a Q lead of 0.01 that z-scoring turns into a
// win over the most similar memory barely moves the raw score.
func TestMemRetrieveRawQ(t *testing.T) {
	ts, _ := startMem(t)
	rdb := ts.client(t)
	mustDo(t, rdb, "MEM.CREATE", "c", "DIM", 2)
	mustDo(t, rdb, "MEM.ADD", "c", "VALUES", 2, 1, 0.1, "Q", 0.50, "ID", 1)
	mustDo(t, rdb, "MEM.ADD", "c", "VALUES", 2, 1, 0.5, "Q", 0.51, "ID", 2)
	mustDo(t, rdb, "MEM.ADD", "c", "VALUES", 2, 0, 1, "Q", 0.50, "ID", 3)
	first := func(args ...any) int64 {
		res := mustDo(t, rdb, append([]any{"MEM.RETRIEVE", "c", "VALUES", 2, 1, 0, "K2", 1}, args...)...).([]any)
		return res[0].([]any)[0].(int64)
	}
	if got := first(); got != 2 {
		t.Fatalf("z-scored Q: first id %d, want 2", got)
	}
	if got := first("RAWQ"); got != 1 {
		t.Fatalf("RAWQ: first id %d, want 1", got)
	}
	if got := first("RAWQ", "LAMBDA", 1); got != 2 {
		t.Fatalf("RAWQ LAMBDA 1: first id %d, want 2", got)
	}
}
