package server

import (
	"fmt"
	"testing"
)

// Limits found by a hostile run of the server (issue 14): values the engine
// cannot represent or compute with are refused with ERR and change nothing.

// TestMemCreateRefusesTruncatedOptions: TRAIN 4294967552 was accepted and
// stored as 256 (a 32-bit field on disk).
func TestMemCreateRefusesTruncatedOptions(t *testing.T) {
	ts, _ := startMem(t)
	rdb := ts.client(t)
	for _, args := range [][]any{
		{"MEM.CREATE", "c", "DIM", 8, "TRAIN", "4294967552"},
		{"MEM.CREATE", "c", "DIM", 8, "TRAIN", "4294967296"},
		{"MEM.CREATE", "c", "DIM", 8, "TRAIN", "9223372036854775807"},
		{"MEM.CREATE", "c", "DIM", "4294967304"},
		{"MEM.CREATE", "c", "DIM", 8, "NLIST", "4294967297"},
		{"MEM.CREATE", "c", "DIM", 8, "PQM", "4294967298"},
		{"MEM.CREATE", "c", "DIM", 8, "PQBITS", "4294967304"},
	} {
		wantErr(t, rdb, "out of range", args...)
	}
	if v := mustDo(t, rdb, "MEM.LIST"); fmt.Sprint(v) != "[]" {
		t.Fatalf("refused creates left collections: %v", v)
	}
	mustDo(t, rdb, "MEM.CREATE", "c", "DIM", 8, "TRAIN", "4294967295")
}
