package server

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/memrl/memrl/cluster"
	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/wal"
)

// mretrieveFill creates collection "m" (dimension 8, L2) holding n
// memories with payloads of payload bytes, attributes, keys and rewarded
// Q values, and returns the vectors it added.
func mretrieveFill(t *testing.T, rdb *redis.Client, n, payload int) [][]float32 {
	t.Helper()
	mustDo(t, rdb, "MEM.CREATE", "m", "DIM", 8, "METRIC", "L2")
	rng := rand.New(rand.NewPCG(1, 2))
	vecs := make([][]float32, n)
	for i := range vecs {
		v := make([]float32, 8)
		for j := range v {
			v[j] = float32(rng.NormFloat64())
		}
		vecs[i] = v
		args := []any{"MEM.ADD", "m", "FP32", fp32(v...), "ATTRS", fmt.Sprintf(`{"g":%d}`, i%3)}
		if i%2 == 0 {
			args = append(args, "KEY", fmt.Sprintf("k%d", i))
		}
		if payload > 0 {
			args = append(args, "PAYLOAD", strings.Repeat(string(rune('a'+i%26)), payload))
		}
		id := mustDo(t, rdb, args...)
		if i%5 == 0 {
			mustDo(t, rdb, "MEM.REWARD", "m", rng.Float64(), id)
		}
	}
	return vecs
}

// mretrieveQueries returns n query vectors near the added ones, and the
// same as MEM.MRETRIEVE arguments (QUERIES n …), alternating FP32 and
// VALUES.
func mretrieveQueries(vecs [][]float32, n int) ([][]float32, []any) {
	rng := rand.New(rand.NewPCG(3, 4))
	qs := make([][]float32, n)
	args := []any{"QUERIES", n}
	for i := range qs {
		q := make([]float32, 8)
		for j := range q {
			q[j] = vecs[rng.IntN(len(vecs))][j] + float32(rng.NormFloat64()*0.1)
		}
		qs[i] = q
		if i%2 == 0 {
			args = append(args, "FP32", fp32(q...))
		} else {
			args = append(args, "VALUES", 8)
			for _, x := range q {
				args = append(args, x)
			}
		}
	}
	return qs, args
}

// TestMRetrieveEqualsRetrieve: each element of MEM.MRETRIEVE's reply is
// what MEM.RETRIEVE with the same options replies for that query, for
// every kind of option (phase 2, filters, payloads, attributes, keys),
// outside and inside MULTI/EXEC.
func TestMRetrieveEqualsRetrieve(t *testing.T) {
	ts, _ := startMem(t)
	rdb := ts.client(t)
	vecs := mretrieveFill(t, rdb, 300, 20)
	qs, qargs := mretrieveQueries(vecs, 37)
	for _, opts := range [][]any{
		nil,
		{"K1", 20, "K2", 7, "LAMBDA", 0.3},
		{"K1", 30, "K2", 10, "LAMBDA", 1, "RAWQ", "DELTA", -20},
		{"K2", 3, "WITHPAYLOAD", "WITHATTRS", "WITHKEYS"},
		{"FILTER", ".g == 1", "K2", 4, "WITHKEYS"},
		{"k2", 2, "withattrs", "filter", ".g != 2"}, // keywords in any case
	} {
		t.Run(fmt.Sprint(opts), func(t *testing.T) {
			args := append(append([]any{"MEM.MRETRIEVE", "m"}, opts...), qargs...)
			got, ok := mustDo(t, rdb, args...).([]any)
			if !ok || len(got) != len(qs) {
				t.Fatalf("MEM.MRETRIEVE: %d elements, want %d", len(got), len(qs))
			}
			want := make([]any, len(qs))
			for i, q := range qs {
				want[i] = mustDo(t, rdb, append([]any{"MEM.RETRIEVE", "m", "FP32", fp32(q...)}, opts...)...)
				if !reflect.DeepEqual(got[i], want[i]) {
					t.Fatalf("query %d: MEM.MRETRIEVE %v\nMEM.RETRIEVE %v", i, got[i], want[i])
				}
				if len(want[i].([]any)) == 0 {
					t.Fatalf("query %d: no results; the test compares nothing", i)
				}
			}
			// Inside a transaction: the same element.
			p := rdb.TxPipeline()
			mrCmd := p.Do(context.Background(), args...)
			if _, err := p.Exec(context.Background()); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(mrCmd.Val(), any(want)) {
				t.Fatalf("inside MULTI/EXEC: %v\nwant %v", mrCmd.Val(), want)
			}
		})
	}
}

// TestMRetrieveBadArgs: a bad count, a query that is not a vector, a bad
// option, or a query the engine refuses (wrong dimension, NaN) is an error
// naming what is wrong (the query by its position, counting from 1), and the reply is
// that error alone; the connection goes on.
func TestMRetrieveBadArgs(t *testing.T) {
	ts, _ := startMem(t)
	rdb := ts.client(t)
	vecs := mretrieveFill(t, rdb, 50, 0)
	good := fp32(vecs[0]...)
	queries := func(n int, bad int, badArgs ...any) []any {
		args := []any{"QUERIES", n}
		for i := range n {
			if i == bad {
				args = append(args, badArgs...)
			} else {
				args = append(args, "FP32", good)
			}
		}
		return args
	}
	nan := float32(math.NaN())
	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"QUERIES", 0, "FP32", good}, fmt.Sprintf("QUERIES count must be 1..%d, got 0", MaxMRetrieveQueries)},
		{queries(MaxMRetrieveQueries+1, -1), fmt.Sprintf("QUERIES count must be 1..%d, got %d", MaxMRetrieveQueries, MaxMRetrieveQueries+1)},
		{[]any{"QUERIES", -3, "FP32", good}, "QUERIES count must be 1..1024, got -3"},
		{[]any{"QUERIES", "x", "FP32", good}, "QUERIES count must be an integer"},
		{[]any{"QUERIES", 3, "FP32", good, "FP32", good}, "QUERIES 3 but only 4 arguments follow"},
		{append(queries(2, -1), "K2", 3), "QUERIES comes last"},
		{[]any{"K2", 3, "FP32", good}, `unknown MEM.MRETRIEVE option "FP32"`},
		{[]any{"K2", 3, "WITHKEYS", "WITHATTRS"}, "QUERIES n expected"},
		{append([]any{"K2", 0}, queries(2, -1)...), "K2 must be 1..10000"},
		{append([]any{"LAMBDA", "nan"}, queries(2, -1)...), "LAMBDA must be a finite number"},
		{append([]any{"FILTER", ".g =="}, queries(2, -1)...), "filter"},
		{queries(4, 2, "FP32", "abc"), "query 3: FP32 blob must be a non-empty multiple of 4 bytes"},
		{queries(4, 3, "VALUES", 8, 1, 2), "query 4: VALUES count 8"},
		{queries(5, 4, "FP32", fp32(1, 2, 3)), "query 5: vector dimension does not match"},
		{queries(5, 1, "FP32", fp32(1, 2, 3, 4, 5, 6, 7, nan)), "query 2: invalid vector: component 7 is NaN"},
		// K2 10000 makes steps of 6 queries: the index is the command's.
		{append([]any{"K1", 10000, "K2", 10000}, queries(20, 14, "FP32", fp32(1))...), "query 15: vector dimension does not match"},
	} {
		wantErr(t, rdb, tc.want, append([]any{"MEM.MRETRIEVE", "m"}, tc.args...)...)
	}
	wantErr(t, rdb, "no such collection", "MEM.MRETRIEVE", "nope", "QUERIES", 1, "FP32", good)
	wantErr(t, rdb, "wrong number of arguments", "MEM.MRETRIEVE", "m", "QUERIES", 1)
	// The largest batch runs.
	got := mustDo(t, rdb, append([]any{"MEM.MRETRIEVE", "m", "K2", 1}, queries(MaxMRetrieveQueries, -1)...)...).([]any)
	if len(got) != MaxMRetrieveQueries {
		t.Fatalf("%d elements for %d queries", len(got), MaxMRetrieveQueries)
	}
	if n := mustDo(t, rdb, "MEM.COUNT", "m"); n != int64(50) {
		t.Fatalf("MEM.COUNT = %v after the errors", n)
	}
}

// TestMRetrieveHeldToMaxMemory: a MEM.MRETRIEVE whose reply would take
// client memory past --maxmemory is refused with -OOM, nothing else
// replied; the budget never passes its limit and is given back whole; a
// batch that fits still runs, and inside EXEC the refused batch is its
// element's -OOM.
func TestMRetrieveHeldToMaxMemory(t *testing.T) {
	const limit = 4 << 20
	db, err := engine.Open(t.TempDir(), engine.Options{Sync: wal.SyncNone, CheckpointInterval: -1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ts := startServer(t, Config{MaxMemory: limit}, func(s *Server) { s.RegisterMem(db) })
	rdb := ts.client(t)
	vecs := mretrieveFill(t, rdb, 40, 64<<10)
	_, qargs := mretrieveQueries(vecs, 100)
	// 100 queries × 5 payloads of 64 KiB: 32 MiB of reply, 8 times the
	// budget. Each MEM.RETRIEVE alone (320 KiB) fits.
	big := append([]any{"MEM.MRETRIEVE", "m", "WITHPAYLOAD"}, qargs...)
	err = rdb.Do(context.Background(), big...).Err()
	if err == nil || !strings.HasPrefix(err.Error(), "OOM ") {
		t.Fatalf("MEM.MRETRIEVE of 32 MiB under a 4 MiB budget: %v, want -OOM", err)
	}
	_, small := mretrieveQueries(vecs, 4)
	if got := mustDo(t, rdb, append([]any{"MEM.MRETRIEVE", "m", "WITHPAYLOAD"}, small...)...).([]any); len(got) != 4 {
		t.Fatalf("a batch that fits: %d elements", len(got))
	}
	p := rdb.TxPipeline()
	bigCmd := p.Do(context.Background(), big...)
	ping := p.Ping(context.Background())
	p.Exec(context.Background())
	if err := bigCmd.Err(); err == nil || !strings.HasPrefix(err.Error(), "OOM ") {
		t.Fatalf("inside EXEC: %v, want -OOM", err)
	}
	if ping.Val() != "PONG" {
		t.Fatalf("PING after it inside EXEC: %v", ping.Val())
	}
	if pk := ts.budget.Peak(); pk > limit {
		t.Fatalf("client memory peaked at %d, past the %d limit", pk, limit)
	}
	rdb.Close()
	for deadline := time.Now().Add(waitBound); ts.budget.Used() != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes still reserved after the replies and close", ts.budget.Used())
		}
	}
}

// TestMRetrieveMaxReplyBytes: a reply past --max-reply-bytes is refused
// with an error saying so.
func TestMRetrieveMaxReplyBytes(t *testing.T) {
	db, err := engine.Open(t.TempDir(), engine.Options{Sync: wal.SyncNone, CheckpointInterval: -1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ts := startServer(t, Config{MaxReplyBytes: 1 << 20}, func(s *Server) { s.RegisterMem(db) })
	rdb := ts.client(t)
	vecs := mretrieveFill(t, rdb, 40, 16<<10)
	_, qargs := mretrieveQueries(vecs, 100) // 100 × 5 × 16 KiB: 8 MiB
	wantErr(t, rdb, "the reply would be", append([]any{"MEM.MRETRIEVE", "m", "WITHPAYLOAD"}, qargs...)...)
}

// TestMRetrieveBusyTimeout: MEM.MRETRIEVE honours busy-timeout: past it
// the batch stops and answers -TIMEOUT alone, and the connection goes on.
// A busy-timeout of a nanosecond has passed before the first query.
func TestMRetrieveBusyTimeout(t *testing.T) {
	db, err := engine.Open(t.TempDir(), engine.Options{Sync: wal.SyncNone, CheckpointInterval: -1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ts := startServer(t, Config{BusyTimeout: time.Nanosecond}, func(s *Server) { s.RegisterMem(db) })
	rdb := ts.client(t)
	vecs := mretrieveFill(t, rdb, 30, 0)
	_, qargs := mretrieveQueries(vecs, 50)
	for _, opts := range [][]any{nil, {"K1", 10000, "K2", 10000}} { // one step; many
		err := rdb.Do(context.Background(), append(append([]any{"MEM.MRETRIEVE", "m"}, opts...), qargs...)...).Err()
		var re redis.Error
		if !errors.As(err, &re) || !strings.HasPrefix(err.Error(), "TIMEOUT ") {
			t.Fatalf("MEM.MRETRIEVE %v: %v, want -TIMEOUT", opts, err)
		}
	}
	if r := mustDo(t, rdb, "PING"); r != "PONG" {
		t.Fatalf("PING = %v", r)
	}
}

// TestMRetrieveErrorRenumbered: mretrieveErr turns the engine's index of
// a query in a step (from 0) into its position in the command (from 1),
// and leaves other errors alone.
func TestMRetrieveErrorRenumbered(t *testing.T) {
	inner := engine.ErrDimension
	got := mretrieveErr(12, fmt.Errorf("query %d: %w", 3, inner))
	if got.Error() != "query 16: "+inner.Error() || !errors.Is(got, engine.ErrDimension) {
		t.Fatalf("renumbered: %v", got)
	}
	if got := mretrieveErr(0, fmt.Errorf("query %d: %w", 0, inner)); got.Error() != "query 1: "+inner.Error() {
		t.Fatalf("first step: %v", got)
	}
	for _, err := range []error{context.DeadlineExceeded, errClientMemory, errors.New("query x: y")} {
		if got := mretrieveErr(6, err); got != err {
			t.Fatalf("%v became %v", err, got)
		}
	}
}

// TestMRetrieveCluster: in cluster mode MEM.MRETRIEVE is routed by its
// collection as MEM.RETRIEVE is: -MOVED to the shard that owns it,
// served by the leader of its own shard, and by a follower on a READONLY
// connection (a read), not on a plain one.
func TestMRetrieveCluster(t *testing.T) {
	tc := startTestCluster(t, 0, 0)
	ctx := context.Background()
	name := nameInShard(0, 1, 0)
	slot := cluster.HashSlot([]byte(name))
	c0 := tc.client(t, "n0")
	mustDo(t, c0, "MEM.CREATE", name, "DIM", 2)
	mustDo(t, c0, "MEM.ADD", name, "VALUES", 2, 1, 0)
	q := []any{"QUERIES", 2, "VALUES", 2, 1, 0, "FP32", fp32(0, 1)}
	got := mustDo(t, c0, append([]any{"MEM.MRETRIEVE", name}, q...)...).([]any)
	if len(got) != 2 || len(got[0].([]any)) != 1 {
		t.Fatalf("MEM.MRETRIEVE on the leader = %v", got)
	}
	if err := tc.db["n1"].Create(name, engine.NewConfig(2)); err != nil {
		t.Fatal(err)
	}
	c1 := tc.client(t, "n1")
	moved := fmt.Sprintf("MOVED %d %s", slot, tc.addr("n0"))
	if err := c1.Do(ctx, append([]any{"MEM.MRETRIEVE", name}, q...)...).Err(); err == nil || err.Error() != moved {
		t.Fatalf("MEM.MRETRIEVE on a follower: %v, want %s", err, moved)
	}
	conn := c1.Conn()
	defer conn.Close()
	if err := conn.ReadOnly(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := conn.Do(ctx, append([]any{"MEM.MRETRIEVE", name}, q...)...).Err(); err != nil {
		t.Fatalf("READONLY MEM.MRETRIEVE on a follower: %v", err)
	}
}

// TestMRetrieveEqualsRetrieveIVF: on a collection searched through its
// IVF-PQ index, where the engine runs a batch's phase 1 as one batch
// search, each element of MEM.MRETRIEVE's reply is still MEM.RETRIEVE's
// reply for that query, with the index's knobs and a DELTA too.
func TestMRetrieveEqualsRetrieveIVF(t *testing.T) {
	ts, db := startMem(t)
	rdb := ts.client(t)
	mustDo(t, rdb, "MEM.CREATE", "v", "DIM", 8, "METRIC", "L2", "INDEX", "IVFPQ", "NLIST", 8, "PQM", 4, "TRAIN", 512)
	rng := rand.New(rand.NewPCG(9, 10))
	vecs := make([][]float32, 3000)
	for i := range vecs {
		vecs[i] = make([]float32, 8)
		for j := range vecs[i] {
			vecs[i][j] = float32(rng.NormFloat64())
		}
	}
	for i := 0; i < len(vecs); i += 500 {
		args := []any{"MEM.MADD", "v"}
		for _, v := range vecs[i : i+500] {
			args = append(args, "FP32", fp32(v...))
		}
		mustDo(t, rdb, args...)
	}
	coll, err := db.Collection("v")
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(waitBound); ; time.Sleep(10 * time.Millisecond) {
		st, err := coll.Stats()
		if err != nil {
			t.Fatal(err)
		}
		if st.Index == "ivfpq" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("index %q: not built", st.Index)
		}
	}
	qs, qargs := mretrieveQueries(vecs, 40)
	for _, opts := range [][]any{nil, {"K1", 25, "K2", 8, "NPROBE", 3, "REFINE", 4}, {"DELTA", -6, "K2", 10, "WITHKEYS"}} {
		got := mustDo(t, rdb, append(append([]any{"MEM.MRETRIEVE", "v"}, opts...), qargs...)...).([]any)
		for i, q := range qs {
			want := mustDo(t, rdb, append([]any{"MEM.RETRIEVE", "v", "FP32", fp32(q...)}, opts...)...)
			if !reflect.DeepEqual(got[i], want) {
				t.Fatalf("%v query %d: MEM.MRETRIEVE %v\nMEM.RETRIEVE %v", opts, i, got[i], want)
			}
		}
	}
}

// TestMRetrieveCommandInfo: COMMAND INFO describes MEM.MRETRIEVE as a
// read of at least 6 arguments (name, coll, QUERIES, n and one vector's
// two) whose key is its collection.
func TestMRetrieveCommandInfo(t *testing.T) {
	ts, _ := startMem(t)
	info, err := ts.client(t).Command(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	ci := info["mem.mretrieve"]
	if ci == nil || ci.Arity != -6 || !ci.ReadOnly || ci.FirstKeyPos != 1 || ci.LastKeyPos != 1 || ci.StepCount != 1 {
		t.Fatalf("COMMAND INFO mem.mretrieve = %+v", ci)
	}
}
