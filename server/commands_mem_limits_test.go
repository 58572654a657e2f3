package server

import (
	"fmt"
	"math"
	"strings"
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
	// An NLIST whose training sample would not fit the 256 MiB budget at
	// this dimension (39 vectors a list) is refused too.
	wantErr(t, rdb, "NLIST must be at most 26 at DIM 65536", "MEM.CREATE", "big", "DIM", 65536, "NLIST", 1024)
	mustDo(t, rdb, "MEM.CREATE", "big", "DIM", 65536, "NLIST", 26)
}

// TestMemAutoIDAfterMaxID: ID 9223372036854775807 made MEM.INFO's next_id
// wrap to -2^63, and every later add without ID fail even after the id
// was deleted.
func TestMemAutoIDAfterMaxID(t *testing.T) {
	ts, _ := startMem(t)
	rdb := ts.client(t)
	mustDo(t, rdb, "MEM.CREATE", "c", "DIM", 2)
	mustDo(t, rdb, "MEM.ADD", "c", "VALUES", 2, 1, 0, "ID", 3)
	if id := mustDo(t, rdb, "MEM.ADD", "c", "VALUES", 2, 1, 0, "ID", "9223372036854775807"); id != int64(math.MaxInt64) {
		t.Fatalf("ADD ID 2^63-1 = %v", id)
	}
	info := func() int64 {
		v := mustDo(t, rdb, "MEM.INFO", "c").([]any)
		for i := 0; i+1 < len(v); i += 2 {
			if v[i] == "next_id" {
				return v[i+1].(int64)
			}
		}
		t.Fatalf("MEM.INFO has no next_id: %v", v)
		return 0
	}
	if n := info(); n != 0 {
		t.Fatalf("next_id %d with no id left, want 0", n)
	}
	wantErr(t, rdb, "no memory ids left", "MEM.ADD", "c", "VALUES", 2, 1, 0)
	mustDo(t, rdb, "MEM.ADD", "c", "VALUES", 2, 1, 0, "ID", 4)
	mustDo(t, rdb, "MEM.DEL", "c", "9223372036854775807")
	if n := info(); n != 5 {
		t.Fatalf("next_id %d after deleting 2^63-1, want 5", n)
	}
	if id := mustDo(t, rdb, "MEM.ADD", "c", "VALUES", 2, 1, 0); id != int64(5) {
		t.Fatalf("ADD without ID after deleting 2^63-1 = %v, want 5", id)
	}
}

// TestMemHugeComponents: in an L2 collection VALUES 2 3e38 3e38 made every
// score nan (Q ignored); in IP similarities came back inf or nan. Such
// vectors are refused on add and retrieve, naming the limit.
func TestMemHugeComponents(t *testing.T) {
	ts, _ := startMem(t)
	rdb := ts.client(t)
	for _, metric := range []string{"L2", "IP"} {
		mustDo(t, rdb, "MEM.CREATE", metric, "DIM", 2, "METRIC", metric)
		mustDo(t, rdb, "MEM.ADD", metric, "VALUES", 2, 1, 2, "Q", 1)
		mustDo(t, rdb, "MEM.ADD", metric, "VALUES", 2, "1e15", "-1e15", "Q", -1)
		wantErr(t, rdb, "at most 1e+15", "MEM.ADD", metric, "VALUES", 2, "3e38", "3e38")
		wantErr(t, rdb, "at most 1e+15", "MEM.ADD", metric, "FP32", fp32(1, -3e38))
		wantErr(t, rdb, "at most 1e+15", "MEM.RETRIEVE", metric, "VALUES", 2, "3e38", "3e38")
		rows := mustDo(t, rdb, "MEM.RETRIEVE", metric, "VALUES", 2, "-1e15", "1e15").([]any)
		if len(rows) != 2 {
			t.Fatalf("%s: %v", metric, rows)
		}
		for _, r := range rows {
			for _, f := range r.([]any)[1:4] {
				if s := f.(string); strings.Contains(s, "nan") || strings.Contains(s, "inf") {
					t.Fatalf("%s: row %v has %s", metric, r, s)
				}
			}
		}
		if v := mustDo(t, rdb, "MEM.INFO", metric).([]any); v[7] != int64(2) {
			t.Fatalf("%s: refused adds changed the count: %v", metric, v)
		}
	}
}
