package server

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestMemBatchWithDataModel: the batch commands carry what the data model
// added to a memory. MEM.MADD takes ATTRS, KEY and TTL per memory (a key
// named twice in one batch, or one a live memory holds, refuses the whole
// batch); MEM.MGET takes keys; MEM.GET, MEM.MGET and MEM.SCAN report
// attributes, key and expiry; an expired memory is left out of MEM.SCAN and
// MEM.COUNT at once and its key can be reused by a batch.
func TestMemBatchWithDataModel(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	ts := startMemClock(t, clock)
	rdb := ts.client(t)
	mustDo(t, rdb, "MEM.CREATE", "c", "DIM", 2, "METRIC", "L2")
	v := mustDo(t, rdb, "MEM.MADD", "c",
		"VALUES", 2, 1, 0, "KEY", "a", "ATTRS", `{"user": "u1"}`,
		"VALUES", 2, 0, 1, "KEY", "b", "TTL", 10,
		"VALUES", 2, 1, 1, "ATTRS", `{"user":"u2"}`)
	if fmt.Sprint(v) != "[1 2 3]" {
		t.Fatalf("MEM.MADD = %v", v)
	}
	wantErr(t, rdb, "memory 2: memory key already exists", "MEM.MADD", "c",
		"VALUES", 2, 1, 0, "KEY", "x", "VALUES", 2, 1, 0, "KEY", "x")
	wantErr(t, rdb, "memory 1: memory key already exists", "MEM.MADD", "c", "VALUES", 2, 1, 0, "KEY", "a")
	wantErr(t, rdb, "memory 2: invalid attributes", "MEM.MADD", "c",
		"VALUES", 2, 1, 0, "VALUES", 2, 1, 0, "ATTRS", "[1]")
	if n := mustDo(t, rdb, "MEM.COUNT", "c"); n != int64(3) {
		t.Fatalf("MEM.COUNT after refused batches = %v", n)
	}

	r := mustDo(t, rdb, "MEM.MGET", "c", "KEY", "b", 3, "KEY", "nope", "KEY", "a").([]any)
	if len(r) != 4 || r[2] != nil {
		t.Fatalf("MEM.MGET = %v", r)
	}
	if field(t, r[0], "id") != int64(2) || field(t, r[0], "expires") != now.Add(10*time.Second).UnixMilli() {
		t.Fatalf("MEM.MGET KEY b = %v", r[0])
	}
	if field(t, r[1], "attrs") != `{"user":"u2"}` || field(t, r[1], "key") != nil {
		t.Fatalf("MEM.MGET 3 = %v", r[1])
	}
	if field(t, r[3], "attrs") != `{"user":"u1"}` || field(t, r[3], "key") != "a" {
		t.Fatalf("MEM.MGET KEY a = %v", r[3])
	}

	page := mustDo(t, rdb, "MEM.SCAN", "c", 0, "COUNT", 10).([]any)
	mems := page[1].([]any)
	if page[0] != "0" || len(mems) != 3 || field(t, mems[0], "key") != "a" || hasField(mems[0], "payload") {
		t.Fatalf("MEM.SCAN = %v", page)
	}

	advance(11 * time.Second) // b expires; the sweeper has not run (test clock)
	page = mustDo(t, rdb, "MEM.SCAN", "c", 0, "COUNT", 10).([]any)
	if mems := page[1].([]any); len(mems) != 2 || field(t, mems[1], "id") != int64(3) {
		t.Fatalf("MEM.SCAN after b expired = %v", page)
	}
	if n := mustDo(t, rdb, "MEM.COUNT", "c"); n != int64(2) {
		t.Fatalf("MEM.COUNT after b expired = %v", n)
	}
	if r := mustDo(t, rdb, "MEM.MGET", "c", "KEY", "b", 2).([]any); r[0] != nil || r[1] != nil {
		t.Fatalf("MEM.MGET of an expired memory = %v", r)
	}
	// Its key is free at once, in a batch too.
	if v := mustDo(t, rdb, "MEM.MADD", "c", "VALUES", 2, 0, 1, "KEY", "b"); fmt.Sprint(v) != "[4]" {
		t.Fatalf("MEM.MADD reusing an expired key = %v", v)
	}
	if g := getFields(t, rdb, "c", "KEY", "b"); g["id"] != int64(4) || g["expires"] != nil {
		t.Fatalf("MEM.GET KEY b = %v", g)
	}
}
