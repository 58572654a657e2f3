package server

import (
	"fmt"
	"slices"
	"testing"
)

// TestMemFilterCommands: FILTER over the protocol. A small tenant's
// retrieval returns its own K1 nearest memories even when every globally
// nearer memory belongs to another tenant (the filter narrows phase 1, it
// does not filter a global top K1); counts, scans and deletes by filter;
// indexed fields declared at create and with MEM.INDEX.
func TestMemFilterCommands(t *testing.T) {
	ts, _ := startMem(t)
	rdb := ts.client(t)
	mustDo(t, rdb, "MEM.CREATE", "m", "DIM", 2, "METRIC", "L2", "INDEXED", "user, kind")
	if f := mustDo(t, rdb, "MEM.INDEX", "m", "LIST"); fmt.Sprint(f) != "[kind user]" {
		t.Fatalf("MEM.INDEX LIST = %v", f)
	}
	// 200 memories of u1 near the origin, 3 of u2 far away.
	for i := range 200 {
		mustDo(t, rdb, "MEM.ADD", "m", "VALUES", 2, float32(i)/1000, 0, "ATTRS", fmt.Sprintf(`{"user":"u1","kind":"k%d"}`, i%2))
	}
	for i := range 3 {
		mustDo(t, rdb, "MEM.ADD", "m", "VALUES", 2, 100+i, 0, "ATTRS", `{"user":"u2","kind":"k1","tags":["plan"]}`)
	}
	rows := mustDo(t, rdb, "MEM.RETRIEVE", "m", "VALUES", 2, 0, 0, "K1", 10, "K2", 10, "LAMBDA", 0,
		"FILTER", `.user == "u2"`, "WITHATTRS").([]any)
	if len(rows) != 3 {
		t.Fatalf("u2's retrieval = %v, want its 3 memories", rows)
	}
	var ids []int64
	for _, r := range rows {
		ids = append(ids, r.([]any)[0].(int64))
	}
	slices.Sort(ids)
	if fmt.Sprint(ids) != "[201 202 203]" {
		t.Fatalf("u2's retrieval ids %v", ids)
	}
	// Unindexed field, and a mix.
	if n := mustDo(t, rdb, "MEM.COUNT", "m", "FILTER", `"plan" in .tags`); n != int64(3) {
		t.Fatalf("MEM.COUNT by tags = %v", n)
	}
	if n := mustDo(t, rdb, "MEM.COUNT", "m", "FILTER", `.user == "u1" and .kind == "k1"`); n != int64(100) {
		t.Fatalf("MEM.COUNT u1 k1 = %v", n)
	}
	var scanned int
	for cursor := "0"; ; {
		page := mustDo(t, rdb, "MEM.SCAN", "m", cursor, "COUNT", 50, "FILTER", `.kind == "k1"`).([]any)
		scanned += len(page[1].([]any))
		if cursor = page[0].(string); cursor == "0" {
			break
		}
	}
	if scanned != 103 {
		t.Fatalf("MEM.SCAN FILTER kind k1 returned %d, want 103", scanned)
	}
	// MEM.INDEX: a field indexed later, dropped.
	mustDo(t, rdb, "MEM.INDEX", "m", "ADD", "tags")
	mustDo(t, rdb, "MEM.INDEX", "m", "DROP", "kind")
	if f := mustDo(t, rdb, "MEM.INDEX", "m", "LIST"); fmt.Sprint(f) != "[tags user]" {
		t.Fatalf("MEM.INDEX LIST = %v", f)
	}
	if n := mustDo(t, rdb, "MEM.COUNT", "m", "FILTER", `"plan" in .tags`); n != int64(3) {
		t.Fatalf("MEM.COUNT by tags, indexed = %v", n)
	}
	// Delete by filter.
	if n := mustDo(t, rdb, "MEM.DEL", "m", "FILTER", `.user == "u1" and .kind == "k0"`); n != int64(100) {
		t.Fatalf("MEM.DEL FILTER = %v", n)
	}
	if n := mustDo(t, rdb, "MEM.COUNT", "m"); n != int64(103) {
		t.Fatalf("MEM.COUNT after MEM.DEL FILTER = %v", n)
	}

	// Bad input: a clear ERR that changes nothing.
	wantErr(t, rdb, `filter: unexpected ")" at column`, "MEM.RETRIEVE", "m", "VALUES", 2, 0, 0, "FILTER", `(.user == "u2"))`)
	wantErr(t, rdb, "filter:", "MEM.COUNT", "m", "FILTER", `.user > "a"`)
	wantErr(t, rdb, "filter:", "MEM.DEL", "m", "FILTER", `.kind ==`)
	wantErr(t, rdb, "wrong number of arguments", "MEM.DEL", "m", "FILTER")
	wantErr(t, rdb, "cannot be indexed", "MEM.INDEX", "m", "ADD", "a b")
	wantErr(t, rdb, "MEM.INDEX takes ADD field, DROP field or LIST", "MEM.INDEX", "m", "REBUILD")
	wantErr(t, rdb, "wrong number of arguments", "MEM.INDEX", "m", "ADD")
	wantErr(t, rdb, "cannot be indexed", "MEM.CREATE", "n", "DIM", 2, "INDEXED", "ok,not ok")
	wantErr(t, rdb, "INDEXED needs field names", "MEM.CREATE", "n", "DIM", 2, "INDEXED", ",")
	if n := mustDo(t, rdb, "MEM.COUNT", "m"); n != int64(103) {
		t.Fatalf("MEM.COUNT after refused commands = %v", n)
	}
	if l := mustDo(t, rdb, "MEM.LIST"); fmt.Sprint(l) != "[m]" {
		t.Fatalf("MEM.LIST after refused creates = %v", l)
	}
}
