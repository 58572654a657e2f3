package server

import (
	"context"
	"testing"
)

// TestMemSetVectorAndAddReplace: MEM.SETVECTOR and MEM.ADD … KEY k REPLACE
// replace a memory's vector (and, for the ADD, its attributes and payload)
// keeping its id, Q and visits, alone and inside MULTI/EXEC; bad input is
// refused with nothing changed.
func TestMemSetVectorAndAddReplace(t *testing.T) {
	ts, _ := startMem(t)
	rdb := ts.client(t)
	ctx := context.Background()
	mustDo(t, rdb, "MEM.CREATE", "m", "DIM", 2, "METRIC", "L2", "ALPHA", 0.5)
	id := mustDo(t, rdb, "MEM.ADD", "m", "VALUES", 2, 1, 0, "KEY", "a", "ATTRS", `{"tag":"x"}`, "PAYLOAD", "p1")
	mustDo(t, rdb, "MEM.ADD", "m", "VALUES", 2, 0, 1, "KEY", "b")
	mustDo(t, rdb, "MEM.REWARD", "m", 1, "KEY", "a")
	check := func(what string, vec []float32, attrs, payload any) {
		t.Helper()
		g := getFields(t, rdb, "m", "KEY", "a", "WITHVECTOR")
		if g["id"] != id || g["vector"] != fp32(vec...) || g["attrs"] != attrs || g["payload"] != payload ||
			g["visits"] != int64(1) || g["q"] != "0.5" {
			t.Fatalf("%s: MEM.GET = %v", what, g)
		}
	}
	if v := mustDo(t, rdb, "MEM.SETVECTOR", "m", "KEY", "a", "VALUES", 2, 5, 5); v != "OK" {
		t.Fatalf("MEM.SETVECTOR = %v", v)
	}
	check("setvector", []float32{5, 5}, `{"tag":"x"}`, "p1")
	if v := mustDo(t, rdb, "MEM.SETVECTOR", "m", id, "FP32", fp32(6, 6)); v != "OK" {
		t.Fatalf("MEM.SETVECTOR by id = %v", v)
	}
	check("setvector by id", []float32{6, 6}, `{"tag":"x"}`, "p1")
	if v := mustDo(t, rdb, "MEM.ADD", "m", "VALUES", 2, 7, 7, "KEY", "a", "REPLACE", "ATTRS", `{"tag":"y"}`, "PAYLOAD", "p2"); v != id {
		t.Fatalf("MEM.ADD … REPLACE = %v, want the memory's id %v", v, id)
	}
	check("add replace", []float32{7, 7}, `{"tag":"y"}`, "p2")
	// The nearest memory to the new vector is a, and only a's new vector
	// is found: two memories, not three.
	res := mustDo(t, rdb, "MEM.RETRIEVE", "m", "VALUES", 2, 7, 7, "K1", 5, "K2", 5, "LAMBDA", 0, "WITHKEYS").([]any)
	if len(res) != 2 {
		t.Fatalf("MEM.RETRIEVE = %v, want 2 memories", res)
	}
	// In a transaction, with an add of a new key.
	p := rdb.TxPipeline()
	p.Do(ctx, "MEM.ADD", "m", "VALUES", 2, 8, 8, "KEY", "a", "REPLACE", "ATTRS", `{"tag":"z"}`)
	p.Do(ctx, "MEM.ADD", "m", "VALUES", 2, 9, 9, "KEY", "c", "REPLACE")
	p.Do(ctx, "MEM.SETVECTOR", "m", "KEY", "b", "VALUES", 2, 0, 2)
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	check("in MULTI", []float32{8, 8}, `{"tag":"z"}`, "")
	if n := mustDo(t, rdb, "MEM.COUNT", "m"); n != int64(3) {
		t.Fatalf("MEM.COUNT = %v, want 3", n)
	}
	wantErr(t, rdb, "no such memory", "MEM.SETVECTOR", "m", "KEY", "nope", "VALUES", 2, 1, 1)
	wantErr(t, rdb, "dimension", "MEM.SETVECTOR", "m", "KEY", "a", "VALUES", 3, 1, 1, 1)
	wantErr(t, rdb, "wrong number of arguments", "MEM.SETVECTOR", "m", "KEY", "a", "VALUES", 2, 1, 1, "extra")
	wantErr(t, rdb, "wrong number of arguments", "MEM.SETVECTOR", "m", "KEY")
	wantErr(t, rdb, "REPLACE needs a KEY", "MEM.ADD", "m", "VALUES", 2, 1, 1, "REPLACE")
	wantErr(t, rdb, "REPLACE takes no ID", "MEM.ADD", "m", "VALUES", 2, 1, 1, "KEY", "a", "ID", 9, "REPLACE")
	wantErr(t, rdb, "REPLACE takes no TTL", "MEM.ADD", "m", "VALUES", 2, 1, 1, "KEY", "a", "TTL", 9, "REPLACE")
	wantErr(t, rdb, "REPLACE is for single adds", "MEM.MADD", "m", "VALUES", 2, 1, 1, "KEY", "a", "REPLACE", "VALUES", 2, 1, 1)
	wantErr(t, rdb, "REPLACE is for single adds", "MEM.MADD", "m", "VALUES", 2, 1, 1, "KEY", "a", "REPLACE")
	check("after the refusals", []float32{8, 8}, `{"tag":"z"}`, "")
	mustDo(t, rdb, "MEM.SNAPSHOT", "m", "s")
	wantErr(t, rdb, "held by a snapshot", "MEM.SETVECTOR", "m", "KEY", "a", "VALUES", 2, 1, 1)
}
