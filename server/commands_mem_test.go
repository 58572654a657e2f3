package server

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/wal"
)

func startMem(t *testing.T) (*testServer, *engine.DB) {
	t.Helper()
	db, err := engine.Open(t.TempDir(), engine.Options{Sync: wal.SyncNone, CheckpointInterval: -1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, Config{}, func(s *Server) { s.RegisterMem(db) })
	t.Cleanup(func() { db.Close() })
	return ts, db
}

func fp32(v ...float32) string {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return string(b)
}

func mustDo(t *testing.T, rdb *redis.Client, args ...any) any {
	t.Helper()
	v, err := rdb.Do(context.Background(), args...).Result()
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return v
}

func wantErr(t *testing.T, rdb *redis.Client, substr string, args ...any) {
	t.Helper()
	err := rdb.Do(context.Background(), args...).Err()
	if err == nil || !strings.HasPrefix(err.Error(), "ERR") || !strings.Contains(err.Error(), substr) {
		t.Fatalf("%v: error %v, want ERR …%s…", args, err, substr)
	}
}

func TestMemCommandsGoRedis(t *testing.T) {
	ts, _ := startMem(t)
	rdb := ts.client(t)
	if v := mustDo(t, rdb, "MEM.CREATE", "plans", "DIM", 2, "METRIC", "cosine", "ALPHA", 0.5, "GAMMA", 0, "QINIT", 0.1); v != "OK" {
		t.Fatalf("MEM.CREATE = %v", v)
	}
	mustDo(t, rdb, "MEM.CREATE", "other", "DIM", 3)
	if v := mustDo(t, rdb, "MEM.LIST"); fmt.Sprint(v) != "[other plans]" {
		t.Fatalf("MEM.LIST = %v", v)
	}
	// The hand-computed pool of the engine tests: cos .9 .8 .7 .6 to (1,0),
	// Q 0 1 0 2, added both ways (FP32 blob and VALUES).
	for i, s := range []float64{.9, .8, .7, .6} {
		x, y := float32(s), float32(math.Sqrt(1-s*s))
		var v any
		if i%2 == 0 {
			v = mustDo(t, rdb, "MEM.ADD", "plans", "FP32", fp32(x, y), "Q", []int{0, 1, 0, 2}[i], "PAYLOAD", fmt.Sprintf("plan %d", i+1))
		} else {
			v = mustDo(t, rdb, "MEM.ADD", "plans", "VALUES", 2, x, y, "ID", i+1, "Q", []int{0, 1, 0, 2}[i], "PAYLOAD", fmt.Sprintf("plan %d", i+1))
		}
		if v != int64(i+1) {
			t.Fatalf("MEM.ADD %d = %v", i, v)
		}
	}
	res := mustDo(t, rdb, "MEM.RETRIEVE", "plans", "VALUES", 2, 1, 0, "K1", 10, "K2", 4, "LAMBDA", 0.5, "WITHPAYLOAD").([]any)
	var order []int64
	for _, r := range res {
		row := r.([]any)
		if len(row) != 5 {
			t.Fatalf("row %v", row)
		}
		order = append(order, row[0].(int64))
		if row[4] != fmt.Sprintf("plan %d", row[0]) {
			t.Fatalf("payload %v for id %v", row[4], row[0])
		}
	}
	if fmt.Sprint(order) != "[2 1 4 3]" {
		t.Fatalf("retrieve order %v", order)
	}
	first := res[0].([]any)
	if first[1] != "0.8" || first[2] != "1" {
		t.Fatalf("sim/q of the first row: %v", first)
	}
	res = mustDo(t, rdb, "MEM.RETRIEVE", "plans", "FP32", fp32(1, 0), "LAMBDA", 0, "DELTA", 0.75).([]any)
	if len(res) != 2 || res[0].([]any)[0] != int64(1) || len(res[0].([]any)) != 4 {
		t.Fatalf("DELTA retrieve %v", res)
	}
	// Rewards: α .5, γ 0. Memory 1 has Q 0 → .5; memory 2 has Q 1 → 1.
	if v := mustDo(t, rdb, "MEM.REWARD", "plans", 1, 1, 2); fmt.Sprint(v) != "[0.5 1]" {
		t.Fatalf("MEM.REWARD = %v", v)
	}
	if v := mustDo(t, rdb, "MEM.REWARD", "plans", -1, 1, "NEXTQ", 3); fmt.Sprint(v) != "[-0.25]" {
		t.Fatalf("MEM.REWARD NEXTQ = %v", v)
	}
	get := mustDo(t, rdb, "MEM.GET", "plans", 1).([]any)
	m := map[string]any{}
	for i := 0; i < len(get); i += 2 {
		m[get[i].(string)] = get[i+1]
	}
	if m["q"] != "-0.25" || m["visits"] != int64(2) || m["last_reward"] != "-1" || m["payload"] != "plan 1" {
		t.Fatalf("MEM.GET = %v", m)
	}
	info := mustDo(t, rdb, "MEM.INFO", "plans").([]any)
	if fmt.Sprint(info[:8]) != "[name plans dim 2 metric COSINE count 4]" || info[13] != "0.1" {
		t.Fatalf("MEM.INFO = %v", info)
	}
	if v := mustDo(t, rdb, "MEM.DEL", "plans", 1, 3, 99); v != int64(2) {
		t.Fatalf("MEM.DEL = %v", v)
	}
	res = mustDo(t, rdb, "MEM.RETRIEVE", "plans", "VALUES", 2, 1, 0).([]any)
	if len(res) != 2 {
		t.Fatalf("after delete: %v", res)
	}
	if v := mustDo(t, rdb, "MEM.CHECKPOINT"); v != "OK" {
		t.Fatalf("MEM.CHECKPOINT = %v", v)
	}
	if v := mustDo(t, rdb, "MEM.CHECKPOINT", "full"); v != "OK" {
		t.Fatalf("MEM.CHECKPOINT FULL = %v", v)
	}
	mi, err := rdb.Info(context.Background(), "memrl").Result()
	if err != nil || !strings.Contains(mi, "checkpoint_last_kind:full\r\n") || !strings.Contains(mi, "checkpoint_deltas:0\r\n") ||
		!strings.Contains(mi, "checkpoints_stopped:\r\n") {
		t.Fatalf("INFO memrl after MEM.CHECKPOINT FULL: %q %v", mi, err)
	}
	mustDo(t, rdb, "MEM.CHECKPOINT")
	if info, _ := rdb.Info(context.Background(), "memrl").Result(); !strings.Contains(info, "checkpoint_last_kind:delta\r\n") ||
		!strings.Contains(info, "checkpoint_deltas:1\r\n") {
		t.Fatalf("INFO memrl after a delta: %q", info)
	}
	wantErr(t, rdb, "unknown MEM.CHECKPOINT option", "MEM.CHECKPOINT", "HALF")
	wantErr(t, rdb, "wrong number of arguments", "MEM.CHECKPOINT", "FULL", "FULL")
	if v := mustDo(t, rdb, "MEM.DROP", "other"); v != "OK" {
		t.Fatalf("MEM.DROP = %v", v)
	}
	if v := mustDo(t, rdb, "MEM.LIST"); fmt.Sprint(v) != "[plans]" {
		t.Fatalf("MEM.LIST after drop = %v", v)
	}
}

func TestMemBadInput(t *testing.T) {
	ts, _ := startMem(t)
	rdb := ts.client(t)
	mustDo(t, rdb, "MEM.CREATE", "c", "DIM", 3)
	mustDo(t, rdb, "MEM.ADD", "c", "VALUES", 3, 1, 2, 3, "ID", 7)
	cases := []struct {
		substr string
		args   []any
	}{
		{"already exists", []any{"MEM.CREATE", "c", "DIM", 3}},
		{"wrong number of arguments", []any{"MEM.CREATE", "d"}},
		{"DIM is required", []any{"MEM.CREATE", "d", "METRIC", "L2"}},
		{"DIM must be", []any{"MEM.CREATE", "d", "DIM", 0}},
		{"DIM must be an integer", []any{"MEM.CREATE", "d", "DIM", "x"}},
		{"unknown metric", []any{"MEM.CREATE", "d", "DIM", 2, "METRIC", "HAMMING"}},
		{"ALPHA must be", []any{"MEM.CREATE", "d", "DIM", 2, "ALPHA", 7}},
		{"unknown MEM.CREATE option", []any{"MEM.CREATE", "d", "DIM", 2, "BOGUS", 1}},
		{"unknown index", []any{"MEM.CREATE", "d", "DIM", 2, "INDEX", "HNSW"}},
		{"PQM must be at most DIM", []any{"MEM.CREATE", "d", "DIM", 6, "PQM", 7}},
		{"PQBITS must be 4 or 8", []any{"MEM.CREATE", "d", "DIM", 8, "PQBITS", 6}},
		{"NLIST must be", []any{"MEM.CREATE", "d", "DIM", 8, "NLIST", -3}},
		{"no such collection", []any{"MEM.ADD", "nope", "VALUES", 1, 1}},
		{"dimension", []any{"MEM.ADD", "c", "VALUES", 2, 1, 2}},
		{"dimension", []any{"MEM.ADD", "c", "FP32", fp32(1, 2, 3, 4)}},
		{"multiple of 4", []any{"MEM.ADD", "c", "FP32", "abcde"}},
		{"NaN", []any{"MEM.ADD", "c", "VALUES", 3, 1, "nan", 2}},
		{"NaN", []any{"MEM.ADD", "c", "FP32", fp32(1, float32(math.Inf(1)), 2)}},
		{"does not match", []any{"MEM.ADD", "c", "VALUES", 5, 1, 2}},
		{"not a number", []any{"MEM.ADD", "c", "VALUES", 3, 1, "two", 3}},
		{"already exists", []any{"MEM.ADD", "c", "VALUES", 3, 1, 1, 1, "ID", 7}},
		{"FP32 or VALUES", []any{"MEM.ADD", "c", "VECTOR", 1}},
		{"K1 must be", []any{"MEM.RETRIEVE", "c", "VALUES", 3, 1, 1, 1, "K1", -1}},
		{"K1 must be an integer", []any{"MEM.RETRIEVE", "c", "VALUES", 3, 1, 1, 1, "K1", "ten"}},
		{"LAMBDA must be", []any{"MEM.RETRIEVE", "c", "VALUES", 3, 1, 1, 1, "LAMBDA", 1.5}},
		{"DELTA must be a finite", []any{"MEM.RETRIEVE", "c", "VALUES", 3, 1, 1, 1, "DELTA", "inf"}},
		{"no such memory", []any{"MEM.REWARD", "c", 1, 7, 8}},
		{"reward must be a finite", []any{"MEM.REWARD", "c", "nan", 7}},
		{"memory id must be", []any{"MEM.REWARD", "c", 1, -7}},
		{"NEXTQ takes one value", []any{"MEM.REWARD", "c", 1, 7, "NEXTQ"}},
		{"no such memory", []any{"MEM.GET", "c", 8}},
		{"wrong number of arguments", []any{"MEM.GET", "c"}},
		{"no such collection", []any{"MEM.DROP", "nope"}},
		{"unknown command", []any{"MEM.NOPE"}},
	}
	for _, tc := range cases {
		wantErr(t, rdb, tc.substr, tc.args...)
	}
	get := mustDo(t, rdb, "MEM.GET", "c", 7).([]any)
	if get[3] != "0" || get[5] != int64(0) {
		t.Fatalf("bad input changed memory 7: %v", get)
	}
	if v := mustDo(t, rdb, "MEM.INFO", "c").([]any); v[7] != int64(1) {
		t.Fatalf("bad input changed the count: %v", v)
	}
	if v := mustDo(t, rdb, "MEM.LIST"); fmt.Sprint(v) != "[c]" {
		t.Fatalf("bad input changed the collections: %v", v)
	}
}

// TestMemPipelinedAndConcurrent sends hundreds of pipelined adds and
// rewards from several clients at once.
func TestMemPipelinedAndConcurrent(t *testing.T) {
	ts, _ := startMem(t)
	ctx := context.Background()
	rdb := ts.client(t)
	mustDo(t, rdb, "MEM.CREATE", "p", "DIM", 4, "ALPHA", 0.1)
	p := rdb.Pipeline()
	for i := 1; i <= 500; i++ {
		p.Do(ctx, "MEM.ADD", "p", "VALUES", 4, i, 1, 2, 3, "ID", i)
	}
	cmds, err := p.Exec(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cmds {
		if v, _ := c.(*redis.Cmd).Result(); v != int64(i+1) {
			t.Fatalf("pipelined add %d = %v", i, v)
		}
	}
	const clients, each = 8, 100
	var wg sync.WaitGroup
	for w := 0; w < clients; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := rdb.Pipeline()
			for i := 0; i < each; i++ {
				p.Do(ctx, "MEM.REWARD", "p", 1, 42)
			}
			if _, err := p.Exec(ctx); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	get := mustDo(t, rdb, "MEM.GET", "p", 42).([]any)
	if get[5] != int64(clients*each) {
		t.Fatalf("visits %v, want %d", get[5], clients*each)
	}
	// Q after n updates toward 1 at α .1 from 0 is 1 - .9^n.
	want := 1 - math.Pow(0.9, clients*each)
	if q, _ := strconv.ParseFloat(get[3].(string), 64); math.Abs(q-want) > 1e-9 {
		t.Fatalf("Q %v, want %v", q, want)
	}
}

// TestMemRedisCLI runs the README's session with Debian's redis-cli.
func TestMemRedisCLI(t *testing.T) {
	cli := redisTool(t, "redis-cli")
	ts, _ := startMem(t)
	h, p := hostPort(t, ts.addr)
	cmd := exec.Command(cli, "-h", h, "-p", p)
	cmd.Stdin = strings.NewReader(strings.Join([]string{
		"MEM.CREATE plans DIM 4 ALPHA 0.3",
		`MEM.ADD plans VALUES 4 0.1 0.9 0.0 0.2 PAYLOAD "book the flight first"`,
		`MEM.ADD plans VALUES 4 0.2 0.8 0.1 0.0 PAYLOAD "ask for the budget" Q 0.5`,
		"MEM.RETRIEVE plans VALUES 4 0.1 0.9 0.0 0.1 K1 10 K2 1 LAMBDA 0 WITHPAYLOAD",
		"MEM.REWARD plans 1 2",
		"MEM.ADD plans VALUES 2 1 2",
		"MEM.LIST",
	}, "\n") + "\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli: %v\n%s", err, out)
	}
	want := "OK\n1\n2\n1\n0.99423945\n0\n1\nbook the flight first\n0.65\n" +
		`ERR vector dimension does not match the collection: got 2, collection "plans" has 4` + "\n\nplans\n"
	if string(out) != want {
		t.Fatalf("redis-cli output:\n%s\nwant:\n%s", out, want)
	}
}

// TestMemIVFPQOverProtocol creates IVFPQ collections with a low training
// threshold, fills them past it, and retrieves with NPROBE and REFINE once
// the index is in use (and with STOP, the early stop, valid and not):
// 8-bit codes on sub-spaces of equal width, and 4-bit
// codes with a PQM that does not divide DIM (3 sub-spaces of 3, 3 and 2
// dimensions).
func TestMemIVFPQOverProtocol(t *testing.T) {
	ts, _ := startMem(t)
	ctx := context.Background()
	rdb := ts.client(t)
	for _, c := range []struct {
		name      string
		pqm, bits int
	}{{"big", 4, 8}, {"odd", 3, 4}} {
		mustDo(t, rdb, "MEM.CREATE", c.name, "DIM", 8, "METRIC", "L2", "INDEX", "IVFPQ", "NLIST", 8, "PQM", c.pqm, "PQBITS", c.bits, "TRAIN", 400)
		p := rdb.Pipeline()
		for i := 1; i <= 800; i++ {
			args := []any{"MEM.ADD", c.name, "VALUES", 8}
			for j := 0; j < 8; j++ {
				args = append(args, float32((i*(j+3))%97))
			}
			p.Do(ctx, args...)
		}
		if _, err := p.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		want := fmt.Sprintf("ivfpq nlist=8 pqm=%d pqbits=%d", c.pqm, c.bits)
		for {
			info := mustDo(t, rdb, "MEM.INFO", c.name).([]any)
			if s, _ := info[19].(string); strings.HasPrefix(s, want) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: index not built: %v", c.name, info)
			}
			time.Sleep(20 * time.Millisecond)
		}
		args := []any{"MEM.RETRIEVE", c.name, "VALUES", 8}
		for j := 0; j < 8; j++ {
			args = append(args, float32((5*(j+3))%97))
		}
		for _, stop := range []any{nil, 1, 0.3} {
			opts := []any{"K1", 5, "K2", 1, "LAMBDA", 0, "NPROBE", 8, "REFINE", 4}
			if stop != nil {
				opts = append(opts, "STOP", stop)
			}
			res := mustDo(t, rdb, append(slices.Clone(args), opts...)...).([]any)
			if len(res) != 1 || res[0].([]any)[0] != int64(5) || res[0].([]any)[1] != "0" {
				t.Fatalf("%s STOP %v: nearest to memory 5: %v", c.name, stop, res)
			}
		}
		for _, bad := range []any{0, -0.5, 1.5, "nan", "inf", "x", "1e-50"} {
			err := rdb.Do(ctx, append(slices.Clone(args), "STOP", bad)...).Err()
			if err == nil || !strings.HasPrefix(err.Error(), "ERR") {
				t.Fatalf("%s: STOP %v: err %v, want an ERR reply", c.name, bad, err)
			}
		}
	}
}

// TestMemLargePayload stores and reads back a 2 MiB payload, and
// retrieves it WITHPAYLOAD.
func TestMemLargePayload(t *testing.T) {
	ts, _ := startMem(t)
	rdb := ts.client(t)
	mustDo(t, rdb, "MEM.CREATE", "p", "DIM", 2)
	payload := make([]byte, 2<<20)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	id := mustDo(t, rdb, "MEM.ADD", "p", "VALUES", 2, 1, 0, "PAYLOAD", payload)
	get := mustDo(t, rdb, "MEM.GET", "p", id).([]any)
	if get[13] != string(payload) {
		t.Fatalf("payload of %d bytes came back as %d bytes", len(payload), len(get[13].(string)))
	}
	res := mustDo(t, rdb, "MEM.RETRIEVE", "p", "VALUES", 2, 1, 0, "WITHPAYLOAD").([]any)
	if res[0].([]any)[4] != string(payload) {
		t.Fatal("WITHPAYLOAD payload differs")
	}
}

// TestMemVerify: MEM.VERIFY replies with a summary of a clean collection,
// and an ERR naming the damaged memory once a payload byte is flipped; the
// damaged payload is never served.
func TestMemVerify(t *testing.T) {
	dir := t.TempDir()
	db, err := engine.Open(dir, engine.Options{Sync: wal.SyncNone, CheckpointInterval: -1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ts := startServer(t, Config{}, func(s *Server) { s.RegisterMem(db) })
	rdb := ts.client(t)
	mustDo(t, rdb, "MEM.CREATE", "v", "DIM", 2)
	mustDo(t, rdb, "MEM.ADD", "v", "VALUES", 2, 1, 0, "ID", 1, "PAYLOAD", "first")
	mustDo(t, rdb, "MEM.ADD", "v", "VALUES", 2, 0, 1, "ID", 2, "PAYLOAD", "second")
	got := fmt.Sprint(mustDo(t, rdb, "MEM.VERIFY", "v"))
	if want := "[rows 2 payloads 2 legacy_payloads 0 checksum_file checked index none damaged 0]"; got != want {
		t.Fatalf("MEM.VERIFY = %s, want %s", got, want)
	}
	wantErr(t, rdb, "no such collection", "MEM.VERIFY", "nope")
	wantErr(t, rdb, "wrong number of arguments", "MEM.VERIFY", "v", "x")

	paths, _ := filepath.Glob(filepath.Join(dir, "collections", "*", "payloads.dat"))
	if len(paths) != 1 {
		t.Fatalf("payload files %v", paths)
	}
	f, err := os.OpenFile(paths[0], os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("S"), int64(len("first")+8)) // memory 2's first byte
	f.Close()
	wantErr(t, rdb, `collection "v": data file damaged: fails its checksum: 1 damaged: memory 2 payload row 1 offset 13`, "MEM.VERIFY", "v")
	wantErr(t, rdb, "memory 2", "MEM.GET", "v", 2)
	if v := mustDo(t, rdb, "MEM.GET", "v", 1).([]any); v[12] != "payload" || v[13] != "first" {
		t.Fatalf("MEM.GET v 1 = %v", v)
	}
}
