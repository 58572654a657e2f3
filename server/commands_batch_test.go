package server

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/wal"
)

// field returns the value of name in a MEM.GET-style field/value array.
func field(t *testing.T, reply any, name string) any {
	t.Helper()
	kv := reply.([]any)
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i] == name {
			return kv[i+1]
		}
	}
	t.Fatalf("no field %q in %v", name, kv)
	return nil
}

func hasField(reply any, name string) bool {
	kv := reply.([]any)
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i] == name {
			return true
		}
	}
	return false
}

// TestMemMAddGrammar: memories in FP32 and VALUES form, each with or
// without ID, Q and PAYLOAD, in any option order, get the ids single adds
// would and are stored as given.
func TestMemMAddGrammar(t *testing.T) {
	ts, _ := startMem(t)
	rdb := ts.client(t)
	mustDo(t, rdb, "MEM.CREATE", "c", "DIM", 2, "METRIC", "L2")
	v := mustDo(t, rdb, "MEM.MADD", "c",
		"FP32", fp32(1, 2), "PAYLOAD", "one",
		"VALUES", 2, 3, 4, "ID", 10, "Q", 0.5,
		"fp32", fp32(5, 6), // keywords are case-insensitive
		"VALUES", 2, 7, 8, "Q", -1, "PAYLOAD", "FP32", "ID", 3, // a payload may read like a keyword
	)
	if fmt.Sprint(v) != "[1 10 11 3]" {
		t.Fatalf("MEM.MADD = %v, want [1 10 11 3]", v)
	}
	want := []struct {
		id      int
		q       string
		payload string
		vec     string
	}{{1, "0", "one", fp32(1, 2)}, {10, "0.5", "", fp32(3, 4)}, {11, "0", "", fp32(5, 6)}, {3, "-1", "FP32", fp32(7, 8)}}
	for _, w := range want {
		g := mustDo(t, rdb, "MEM.GET", "c", w.id, "WITHVECTOR")
		if field(t, g, "q") != w.q || field(t, g, "payload") != w.payload || field(t, g, "vector") != w.vec {
			t.Errorf("memory %d: %v", w.id, g)
		}
	}
	if n := mustDo(t, rdb, "MEM.COUNT", "c"); n != int64(4) {
		t.Fatalf("MEM.COUNT = %v", n)
	}
}

// TestMemMAddAllOrNothing: a bad memory anywhere in MEM.MADD, whether the
// parser or the engine finds it, is an ERR naming its position, and
// nothing is added.
func TestMemMAddAllOrNothing(t *testing.T) {
	ts, _ := startMem(t)
	rdb := ts.client(t)
	mustDo(t, rdb, "MEM.CREATE", "c", "DIM", 2)
	mustDo(t, rdb, "MEM.ADD", "c", "VALUES", 2, 1, 1, "ID", 7)
	good := []any{"VALUES", 2, 1, 2}
	batch := func(mems ...[]any) []any {
		args := []any{"MEM.MADD", "c"}
		for _, m := range mems {
			args = append(args, m...)
		}
		return args
	}
	cases := []struct {
		substr string
		args   []any
	}{
		{"memory 1: syntax error: FP32 or VALUES expected", batch([]any{"ID", 3, "VALUES", 2, 1, 2})},
		{"memory 2: syntax error: unknown MEM.MADD option \"BOGUS\"", batch(good, []any{"VALUES", 2, 1, 2, "BOGUS", 1}, good)},
		{"memory 2: syntax error: PAYLOAD expected", batch(good, []any{"VALUES", 2, 1, 2, "PAYLOAD"})},
		{"memory 3: VALUES count 5 does not match", batch(good, good, []any{"VALUES", 5, 1, 2})},
		{"memory 2: Q must be a finite number", batch(good, []any{"VALUES", 2, 1, 2, "Q", "nan"})},
		{"memory 2: FP32 blob must be", batch(good, []any{"FP32", "abc"}, good)},
		{"memory 3: vector dimension does not match", batch(good, good, []any{"FP32", fp32(1, 2, 3)}, good)},
		{"memory 2: invalid vector", batch(good, []any{"VALUES", 2, 0, 0})}, // all zero in a COSINE collection
		{"memory 1: memory id already exists: 7", batch([]any{"VALUES", 2, 1, 2, "ID", 7}, good)},
		{"memory 3: memory id already exists: 9 (named earlier", batch(good, []any{"VALUES", 2, 1, 2, "ID", 9}, []any{"VALUES", 2, 1, 2, "ID", 9})},
		{"memory 2: memory id already exists: 8", batch(good, []any{"VALUES", 2, 1, 2, "ID", 8})}, // memory 1 took 8
		{"no such collection", []any{"MEM.MADD", "nope", "VALUES", 2, 1, 2}},
		{"wrong number of arguments", []any{"MEM.MADD", "c", "VALUES"}},
	}
	for _, tc := range cases {
		wantErr(t, rdb, tc.substr, tc.args...)
	}
	if n := mustDo(t, rdb, "MEM.COUNT", "c"); n != int64(1) {
		t.Fatalf("refused batches changed the count to %v", n)
	}
	if next := field(t, mustDo(t, rdb, "MEM.INFO", "c"), "next_id"); next != int64(8) {
		t.Fatalf("refused batches moved next_id to %v", next)
	}
}

// TestMemMAddOneFsync: with --sync always, one MEM.MADD of 500 memories
// costs one fsync of the log, where 500 MEM.ADD sent one after another
// cost one each.
func TestMemMAddOneFsync(t *testing.T) {
	db, err := engine.Open(t.TempDir(), engine.Options{Sync: wal.SyncAlways, CheckpointInterval: -1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ts := startServer(t, Config{}, func(s *Server) { s.RegisterMem(db) })
	rdb := ts.client(t)
	mustDo(t, rdb, "MEM.CREATE", "c", "DIM", 8)
	args := []any{"MEM.MADD", "c"}
	for i := 0; i < 500; i++ {
		args = append(args, "FP32", fp32(1, float32(i), 2, 3, 4, 5, 6, 7), "PAYLOAD", strings.Repeat("p", i))
	}
	before := db.WALStats().Syncs
	ids := mustDo(t, rdb, args...).([]any)
	if got := db.WALStats().Syncs - before; got != 1 || len(ids) != 500 {
		t.Fatalf("MEM.MADD of %d memories: %d fsyncs, want 1", len(ids), got)
	}
	before = db.WALStats().Syncs
	for i := 0; i < 20; i++ {
		mustDo(t, rdb, "MEM.ADD", "c", "FP32", fp32(1, 2, 3, 4, 5, 6, 7, 8))
	}
	if got := db.WALStats().Syncs - before; got != 20 {
		t.Fatalf("20 MEM.ADD one after another: %d fsyncs, want 20", got)
	}
}

// TestMemMAddClientMemory: MEM.MADD reserves the copies it makes from the
// client-memory budget; a batch past it is refused with -OOM and adds
// nothing.
func TestMemMAddClientMemory(t *testing.T) {
	db, err := engine.Open(t.TempDir(), engine.Options{Sync: wal.SyncNone, CheckpointInterval: -1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ts := startServer(t, Config{MaxMemory: 8 << 20}, func(s *Server) { s.RegisterMem(db) })
	rdb := ts.client(t)
	mustDo(t, rdb, "MEM.CREATE", "c", "DIM", 2)
	args := []any{"MEM.MADD", "c"}
	for i := 0; i < 3; i++ {
		args = append(args, "VALUES", 2, 1, 2, "PAYLOAD", strings.Repeat("p", 600<<10))
	}
	// 1.8 MB of arguments, held by the reader and reserved four times more
	// by MEM.MADD: 9 MB, past the 8 MiB budget. Two of them take 6 MB.
	err = rdb.Do(context.Background(), args...).Err()
	if err == nil || !strings.HasPrefix(err.Error(), "OOM") {
		t.Fatalf("MEM.MADD past the budget: %v, want OOM", err)
	}
	if n := mustDo(t, rdb, "MEM.COUNT", "c"); n != int64(0) {
		t.Fatalf("a refused MEM.MADD added %v memories", n)
	}
	if v := mustDo(t, rdb, append([]any{"MEM.MADD", "c"}, args[2:2+2*6]...)...); fmt.Sprint(v) != "[1 2]" {
		t.Fatalf("MEM.MADD within the budget = %v", v)
	}
}

// TestMemGetWithVector: WITHVECTOR adds the vector as an FP32 blob, exactly
// as given in an L2 collection and normalised in a COSINE one; MEM.MGET
// replies nulls for missing ids and takes WITHVECTOR too.
func TestMemGetWithVector(t *testing.T) {
	ts, _ := startMem(t)
	rdb := ts.client(t)
	mustDo(t, rdb, "MEM.CREATE", "l2", "DIM", 3, "METRIC", "L2")
	mustDo(t, rdb, "MEM.CREATE", "cos", "DIM", 2)
	v := []float32{0.1, -2.5e-3, 12345.678}
	mustDo(t, rdb, "MEM.ADD", "l2", "FP32", fp32(v...), "PAYLOAD", "x")
	if got := field(t, mustDo(t, rdb, "MEM.GET", "l2", 1, "withvector"), "vector"); got != fp32(v...) {
		t.Fatalf("L2 vector %q, want %q", got, fp32(v...))
	}
	mustDo(t, rdb, "MEM.ADD", "cos", "VALUES", 2, 3, 4)
	if got := field(t, mustDo(t, rdb, "MEM.GET", "cos", 1, "WITHVECTOR"), "vector"); got != fp32(0.6, 0.8) {
		t.Fatalf("COSINE vector %q, want the normalised %q", got, fp32(0.6, 0.8))
	}
	if g := mustDo(t, rdb, "MEM.GET", "cos", 1); hasField(g, "vector") || len(g.([]any)) != 20 {
		t.Fatalf("MEM.GET without WITHVECTOR = %v", g)
	}
	wantErr(t, rdb, "unknown MEM.GET option", "MEM.GET", "cos", 1, "WITHVECTORS")
	wantErr(t, rdb, "wrong number of arguments", "MEM.GET", "cos", 1, "WITHVECTOR", "x")

	mustDo(t, rdb, "MEM.ADD", "l2", "VALUES", 3, 1, 2, 3, "ID", 5, "PAYLOAD", "five")
	r := mustDo(t, rdb, "MEM.MGET", "l2", 5, 2, 1, 5).([]any)
	if len(r) != 4 || r[1] != nil || field(t, r[0], "payload") != "five" || field(t, r[2], "payload") != "x" ||
		field(t, r[3], "id") != int64(5) || hasField(r[0], "vector") {
		t.Fatalf("MEM.MGET = %v", r)
	}
	r = mustDo(t, rdb, "MEM.MGET", "l2", 1, 9, "WITHVECTOR").([]any)
	if len(r) != 2 || r[1] != nil || field(t, r[0], "vector") != fp32(v...) {
		t.Fatalf("MEM.MGET WITHVECTOR = %v", r)
	}
	wantErr(t, rdb, "memory id must be", "MEM.MGET", "l2", 1, "x")
	wantErr(t, rdb, "wrong number of arguments", "MEM.MGET", "l2", "WITHVECTOR")
	wantErr(t, rdb, "no such collection", "MEM.MGET", "nope", 1)
}

// scanProto scans coll over the protocol with pages of count and returns
// the ids in the order returned.
func scanProto(t *testing.T, rdb *redis.Client, coll string, count int, extra ...any) []int64 {
	t.Helper()
	var ids []int64
	cursor := "0"
	for {
		args := append([]any{"MEM.SCAN", coll, cursor, "COUNT", count}, extra...)
		r := mustDo(t, rdb, args...).([]any)
		if len(r) != 2 {
			t.Fatalf("MEM.SCAN = %v", r)
		}
		for _, m := range r[1].([]any) {
			ids = append(ids, field(t, m, "id").(int64))
		}
		cursor = r[0].(string)
		if cursor == "0" {
			return ids
		}
	}
}

// TestMemScan: pages in id order, the cursor as a string, COUNT's default
// and bounds, and WITHPAYLOAD / WITHVECTOR.
func TestMemScan(t *testing.T) {
	ts, _ := startMem(t)
	rdb := ts.client(t)
	mustDo(t, rdb, "MEM.CREATE", "c", "DIM", 2, "METRIC", "IP")
	args := []any{"MEM.MADD", "c"}
	var want []int64
	for i := 1; i <= 95; i++ {
		args = append(args, "VALUES", 2, i, 1, "ID", i*3, "PAYLOAD", "p"+strconv.Itoa(i*3))
		want = append(want, int64(i*3))
	}
	mustDo(t, rdb, args...)
	mustDo(t, rdb, "MEM.DEL", "c", 30, 33)
	want = slices.DeleteFunc(want, func(id int64) bool { return id == 30 || id == 33 })
	for _, count := range []int{1, 10, 1000} {
		if got := scanProto(t, rdb, "c", count); !slices.Equal(got, want) {
			t.Fatalf("COUNT %d: %v, want %v", count, got, want)
		}
	}
	r := mustDo(t, rdb, "MEM.SCAN", "c", "0").([]any)
	page := r[1].([]any)
	if r[0] != "37" || len(page) != 10 || hasField(page[0], "payload") || hasField(page[0], "vector") {
		t.Fatalf("default page = %v", r)
	}
	r = mustDo(t, rdb, "MEM.SCAN", "c", "37", "WITHPAYLOAD", "WITHVECTOR", "COUNT", 2).([]any)
	page = r[1].([]any)
	if r[0] != "43" || len(page) != 2 || field(t, page[0], "payload") != "p39" || field(t, page[1], "vector") != fp32(14, 1) {
		t.Fatalf("page from 37 = %v", r)
	}
	if r := mustDo(t, rdb, "MEM.SCAN", "c", "100000").([]any); r[0] != "0" || len(r[1].([]any)) != 0 {
		t.Fatalf("past the end = %v", r)
	}
	wantErr(t, rdb, "COUNT must be 1..1000", "MEM.SCAN", "c", "0", "COUNT", 0)
	wantErr(t, rdb, "COUNT must be 1..1000", "MEM.SCAN", "c", "0", "COUNT", 1001)
	wantErr(t, rdb, "COUNT must be an integer", "MEM.SCAN", "c", "0", "COUNT", "x")
	wantErr(t, rdb, "cursor must be", "MEM.SCAN", "c", "-1")
	wantErr(t, rdb, "unknown MEM.SCAN option", "MEM.SCAN", "c", "0", "FILTERS", ".a == 1")
	wantErr(t, rdb, "filter: unexpected", "MEM.SCAN", "c", "0", "FILTER", ".a ==")
	wantErr(t, rdb, "no such collection", "MEM.SCAN", "nope", "0")
	wantErr(t, rdb, "wrong number of arguments", "MEM.COUNT", "c", "FILTER")
	wantErr(t, rdb, "no such collection", "MEM.COUNT", "nope")
}

// TestMemScanExactlyOnceUnderWrites: over the protocol, while two clients
// add (MEM.MADD) and delete memories, a scan returns each memory that was
// there for the whole scan exactly once.
func TestMemScanExactlyOnceUnderWrites(t *testing.T) {
	ts, _ := startMem(t)
	rdb := ts.client(t)
	mustDo(t, rdb, "MEM.CREATE", "c", "DIM", 2)
	args := []any{"MEM.MADD", "c"}
	stable := map[int64]bool{}
	for id := 1; id < 1000; id += 2 {
		args = append(args, "VALUES", 2, 1, 1, "ID", id)
		stable[int64(id)] = true
	}
	mustDo(t, rdb, args...)
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			ctx := context.Background()
			for i := 0; !stop.Load(); i++ {
				id := ((i*37 + w*11) % 500) * 2 // even: never a stable id
				if i%2 == 0 {
					rdb.Do(ctx, "MEM.MADD", "c", "VALUES", 2, 1, 2, "ID", id, "VALUES", 2, 2, 1, "ID", id+2) // may fail: live
				} else {
					rdb.Do(ctx, "MEM.DEL", "c", id, id+2)
				}
			}
		}(w)
	}
	for _, count := range []int{3, 17, 100} {
		seen := map[int64]int{}
		for _, id := range scanProto(t, rdb, "c", count) {
			if seen[id]++; seen[id] > 1 {
				t.Fatalf("COUNT %d: id %d returned twice", count, id)
			}
		}
		for id := range stable {
			if seen[id] != 1 {
				t.Fatalf("COUNT %d: stable id %d returned %d times", count, id, seen[id])
			}
		}
	}
	stop.Store(true)
	wg.Wait()
}

// TestMemBatchRedisPy: a Python front end (redis-py, Debian's python3-redis,
// which scripts/test.sh installs) loads memories with MEM.MADD, reads them
// back with MEM.MGET and MEM.GET WITHVECTOR, pages through them with
// MEM.SCAN, and counts them, as a MemRL MemoryService would.
func TestMemBatchRedisPy(t *testing.T) {
	py := "/usr/bin/python3"
	if out, err := exec.Command(py, "-c", "import redis").CombinedOutput(); err != nil {
		t.Fatalf("redis-py is missing (scripts/test.sh installs python3-redis): %v\n%s", err, out)
	}
	ts, _ := startMem(t)
	h, p := hostPort(t, ts.addr)
	script := `
import struct, sys, redis
r = redis.Redis(host=sys.argv[1], port=int(sys.argv[2]))
r.execute_command("MEM.CREATE", "m", "DIM", 3, "METRIC", "L2")
args = []
for i in range(250):
    args += ["FP32", struct.pack("<3f", i, 0.5, -1.0), "PAYLOAD", "task-%d" % i]
ids = r.execute_command("MEM.MADD", "m", *args)
print(len(ids), ids[0], ids[-1])
got = r.execute_command("MEM.MGET", "m", 1, 999, 250)
print(got[0][got[0].index(b"payload") + 1].decode(), got[1], got[2][1])
g = r.execute_command("MEM.GET", "m", 3, "WITHVECTOR")
print(struct.unpack("<3f", g[g.index(b"vector") + 1]))
seen, cursor, pages = [], b"0", 0
while True:
    cursor, page = r.execute_command("MEM.SCAN", "m", cursor, "COUNT", 100)
    seen += [m[1] for m in page]
    pages += 1
    if cursor == b"0":
        break
print(pages, len(seen), seen == sorted(seen) == ids)
print(r.execute_command("MEM.COUNT", "m"))
try:
    r.execute_command("MEM.MADD", "m", "VALUES", 3, 1, 2, 3, "VALUES", 2, 1, 2)
except redis.exceptions.ResponseError as e:
    print(e)
print(r.execute_command("MEM.COUNT", "m"))
`
	out, err := exec.Command(py, "-c", script, h, p).CombinedOutput()
	want := "250 1 250\ntask-0 None 250\n(2.0, 0.5, -1.0)\n3 250 True\n250\n" +
		`memory 2: vector dimension does not match the collection: got 2, collection "m" has 3` + "\n250\n"
	if err != nil || string(out) != want {
		t.Fatalf("redis-py: %v\n%s\nwant:\n%s", err, out, want)
	}
}
