package server

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestMemPruneCommand: MEM.PRUNE over the protocol on a fake clock: each
// criterion, FILTER, DRYRUN (counts, deletes nothing), MAXCOUNT, and the
// pruned memories are gone.
func TestMemPruneCommand(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	ts := startMemClock(t, clock)
	rdb := ts.client(t)
	mustDo(t, rdb, "MEM.CREATE", "m", "DIM", 2, "METRIC", "L2")
	// Ids 1..10: Q = id, tenant a for odd ids, b for even; 100 s apart.
	for i := 1; i <= 10; i++ {
		tenant := map[bool]string{true: "a", false: "b"}[i%2 == 1]
		mustDo(t, rdb, "MEM.ADD", "m", "VALUES", 2, i, 0, "Q", i, "ATTRS", fmt.Sprintf(`{"tenant":%q}`, tenant))
		advance(100 * time.Second)
	}
	count := func() int64 { return mustDo(t, rdb, "MEM.COUNT", "m").(int64) }
	// Now memory i is (11-i)*100 s old.
	for _, tc := range []struct {
		args []any
		want int64
	}{
		{[]any{"QBELOW", 4}, 3},
		{[]any{"QBELOW", 4, "MINVISITS", 1}, 0},
		{[]any{"qbelow", "4.5", "filter", `.tenant == "a"`}, 2},
		{[]any{"OLDER", 500}, 5},
		{[]any{"IDLE", 500}, 5},
		{[]any{"OLDER", 500, "QBELOW", 3}, 2},
		{[]any{"MAXCOUNT", 3}, 7},
		{[]any{"MAXCOUNT", 3, "FILTER", `.tenant == "b"`}, 2},
		{[]any{"MAXCOUNT", 0, "QBELOW", 2}, 10},
	} {
		args := append(append([]any{"MEM.PRUNE", "m"}, tc.args...), "DRYRUN")
		if n := mustDo(t, rdb, args...); n != tc.want {
			t.Fatalf("%v = %v, want %d", args, n, tc.want)
		}
	}
	if n := count(); n != 10 {
		t.Fatalf("dry runs changed the count: %d", n)
	}
	// A reward is a use: memory 1 is no longer idle.
	mustDo(t, rdb, "MEM.REWARD", "m", 0, 1)
	if n := mustDo(t, rdb, "MEM.PRUNE", "m", "IDLE", 500); n != int64(4) {
		t.Fatalf("MEM.PRUNE IDLE 500 = %v, want 4 (ids 2..5)", n)
	}
	for id, live := range map[int]bool{1: true, 2: false, 5: false, 6: true} {
		if v := mustDo(t, rdb, "MEM.MGET", "m", id); (fmt.Sprint(v) != "[<nil>]") != live {
			t.Fatalf("memory %d after prune: %v, want live=%v", id, v, live)
		}
	}
	if n := mustDo(t, rdb, "MEM.PRUNE", "m", "MAXCOUNT", 2); n != int64(4) {
		t.Fatalf("MEM.PRUNE MAXCOUNT 2 = %v, want 4", n)
	}
	if n := count(); n != 2 {
		t.Fatalf("after MAXCOUNT 2: %d memories", n)
	}
	if n := mustDo(t, rdb, "MEM.PRUNE", "m", "QBELOW", -100); n != int64(0) {
		t.Fatalf("MEM.PRUNE QBELOW -100 = %v", n)
	}
}

// TestMemPruneBadInput: grammar errors and bad values are an ERR that
// deletes nothing.
func TestMemPruneBadInput(t *testing.T) {
	ts, _ := startMem(t)
	rdb := ts.client(t)
	mustDo(t, rdb, "MEM.CREATE", "m", "DIM", 2)
	mustDo(t, rdb, "MEM.ADD", "m", "VALUES", 2, 1, 0, "Q", -5)
	for _, tc := range []struct {
		err  string
		args []any
	}{
		{"wrong number of arguments", nil},
		{"at least one of", []any{"m"}},
		{"at least one of", []any{"m", "DRYRUN"}},
		{"at least one of", []any{"m", "FILTER", ".x == 1"}},
		{"MINVISITS needs QBELOW", []any{"m", "MINVISITS", 1, "OLDER", 0}},
		{"finite number", []any{"m", "QBELOW", "nan"}},
		{"finite number", []any{"m", "QBELOW", "inf"}},
		{"finite number", []any{"m", "QBELOW", "x"}},
		{"non-negative integer", []any{"m", "OLDER", -1}},
		{"non-negative integer", []any{"m", "IDLE", "1.5"}},
		{"at most", []any{"m", "IDLE", "99999999999999"}},
		{"non-negative integer", []any{"m", "MAXCOUNT", -1}},
		{"non-negative integer", []any{"m", "QBELOW", 0, "MINVISITS", -1}},
		{"expected", []any{"m", "QBELOW"}},
		{"expected", []any{"m", "FILTER"}},
		{"unknown MEM.PRUNE option", []any{"m", "QBELOW", 0, "ALL"}},
		{"given twice", []any{"m", "QBELOW", 0, "QBELOW", 1}},
		{"no such collection", []any{"nope", "QBELOW", 0}},
	} {
		wantErr(t, rdb, tc.err, append([]any{"MEM.PRUNE"}, tc.args...)...)
	}
	wantErr(t, rdb, "", "MEM.PRUNE", "m", "QBELOW", 0, "FILTER", "((")
	if n := mustDo(t, rdb, "MEM.COUNT", "m"); n != int64(1) {
		t.Fatalf("bad prunes deleted: %v memories left", n)
	}
}
