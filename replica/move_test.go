package replica

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// startMoveGroup is startGroup whose nodes stop followers first, the
// leader last, when the test ends: stopping the leader first makes the
// others elect a leader of a new term, whose heartbeats can reach a node
// whose raft store its Close is closing (hashicorp/raft's heartbeat fast
// path runs on the transport's goroutine, which Shutdown does not wait
// for), a panic under load ("failed to save current term").
func startMoveGroup(t *testing.T, n int) []*testNode {
	nodes := startGroup(t, n)
	t.Cleanup(func() {
		for _, tn := range nodes {
			if tn.node != nil && !tn.node.IsLeader() {
				tn.stop(t)
			}
		}
		for _, tn := range nodes {
			tn.stop(t)
		}
	})
	return nodes
}

// moveDriver runs the steps of a collection move (the mover's,
// cmd/memrl/cluster_move.go) against two in-process groups.
type moveDriver struct {
	t        *testing.T
	src, dst []*testNode
	name, id string
	chunk    int
}

func (d *moveDriver) do(nodes []*testNode, args ...any) any {
	d.t.Helper()
	l := waitLeader(d.t, nodes)
	v, err := l.client(d.t).Do(context.Background(), args...).Result()
	if err != nil {
		d.t.Fatalf("%v: %v", args, err)
	}
	return v
}

// export runs MEMRL.EXPORT and copies the image into the target (BEGIN,
// CHUNK ×, PREPARE, COMMIT once the leader's preparation is done); it
// returns X.
func (d *moveDriver) export() int64 {
	d.t.Helper()
	x, seq := d.stage()
	d.do(d.dst, "MEMRL.IMPORT", "PREPARE", d.id, seq)
	d.waitReady()
	d.do(d.dst, "MEMRL.IMPORT", "COMMIT", d.id, seq, x)
	d.do(d.src, "MEMRL.EXPORTDONE", d.id)
	return x
}

// waitReady polls the target leader's MEMRL.IMPORTREADY until its
// preparation has ended (not 0).
func (d *moveDriver) waitReady() {
	d.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for d.do(d.dst, "MEMRL.IMPORTREADY", d.id).(int64) == 0 {
		if time.Now().After(deadline) {
			d.t.Fatal("the target leader's preparation did not end in 60 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stage runs MEMRL.EXPORT and stages the image on the target (BEGIN,
// CHUNK ×); it returns X and the number of chunks.
func (d *moveDriver) stage() (int64, int) {
	d.t.Helper()
	ctx := context.Background()
	srcLeader := waitLeader(d.t, d.src)
	x := d.do(d.src, "MEMRL.EXPORT", d.name, d.id).(int64)
	d.do(d.dst, "MEMRL.IMPORT", "BEGIN", d.name, d.id)
	c := srcLeader.client(d.t)
	var off int64
	seq := 0
	deadline := time.Now().Add(60 * time.Second)
	for {
		v, err := c.Do(ctx, "MEMRL.EXPORTREAD", d.id, off, d.chunk).Result()
		if err != nil && strings.HasPrefix(err.Error(), "TRYAGAIN") && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if err != nil {
			d.t.Fatalf("MEMRL.EXPORTREAD: %v", err)
		}
		a := v.([]any)
		if a[0].(int64) != x {
			d.t.Fatalf("MEMRL.EXPORTREAD says X %v, MEMRL.EXPORT %d", a[0], x)
		}
		chunk := a[2].(string)
		if len(chunk) > 0 {
			d.do(d.dst, "MEMRL.IMPORT", "CHUNK", d.id, seq, chunk)
			if seq == 0 { // a resent chunk changes nothing
				d.do(d.dst, "MEMRL.IMPORT", "CHUNK", d.id, seq, chunk)
			}
			seq++
			off += int64(len(chunk))
		}
		if off >= a[1].(int64) {
			break
		}
	}
	return x, seq
}

// delta copies the source's commands after *cursor up to upto and
// returns how many; resend sends the same replay twice.
func (d *moveDriver) delta(cursor *int64, upto int64, resend bool) int {
	d.t.Helper()
	v := d.do(d.src, "MEMRL.DELTA", d.name, *cursor, upto, 1<<20).([]any)
	cmds := v[1].([]any)
	if len(cmds) > 0 {
		args := []any{"MEMRL.REPLAY", d.name, len(cmds)}
		for _, c := range cmds {
			e := c.([]any)
			cmd := e[3].([]any)
			args = append(args, e[0], e[1], e[2], len(cmd))
			args = append(args, cmd...)
		}
		if n := d.do(d.dst, args...).(int64); n != int64(len(cmds)) {
			d.t.Fatalf("MEMRL.REPLAY applied %d of %d", n, len(cmds))
		}
		if resend {
			if n := d.do(d.dst, args...).(int64); n != 0 {
				d.t.Fatalf("a resent MEMRL.REPLAY applied %d commands again", n)
			}
		}
	}
	*cursor = max(*cursor, v[0].(int64))
	return len(cmds)
}

// collState is what the clients see of a collection: every memory (MEM.GET
// of each id, with its history), the snapshots, and a retrieval.
func collState(t *testing.T, c *redis.Client, name string, ids []int64) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	for _, id := range ids {
		v, err := c.Do(ctx, "MEM.GET", name, id).Result()
		h, herr := c.Do(ctx, "MEM.HISTORY", name, id).Result()
		fmt.Fprintf(&b, "%d: %v %v | %v %v\n", id, v, err, h, herr)
	}
	v, err := c.Do(ctx, "MEM.SNAPSHOTS", name).Result()
	fmt.Fprintf(&b, "snapshots %v %v\n", v, err)
	v, err = c.Do(ctx, "MEM.RETRIEVE", name, "VALUES", 4, 0.5, 0.5, 0.1, 0, "K1", 50, "K2", 20, "WITHPAYLOAD").Result()
	fmt.Fprintf(&b, "retrieve %v %v\n", v, err)
	v, err = c.Do(ctx, "MEM.COUNT", name).Result()
	fmt.Fprintf(&b, "count %v %v\n", v, err)
	return b.String()
}

// TestMoveCollection moves a collection between two 3-node groups while a
// client writes to it: the target ends equal in every field the clients
// see to the source at the pause (memories with Q, visits, attributes,
// keys and payloads, history, snapshots, retrieval), its replicas agree,
// writes during the pause are refused with TRYAGAIN and change nothing,
// and every acknowledged write is on the target exactly once.
func TestMoveCollection(t *testing.T) {
	src, dst := startMoveGroup(t, 3), startMoveGroup(t, 3)
	ctx := context.Background()
	sl := waitLeader(t, src)
	sc := sl.client(t)
	const name = "{m}.plans"
	if err := sc.Do(ctx, "MEM.CREATE", name, "DIM", 4).Err(); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for i := range 60 {
		id, err := sc.Do(ctx, "MEM.ADD", name, "VALUES", 4, float64(i%7)/7, 0.5, float64(i%3)/3, 0.1,
			"PAYLOAD", fmt.Sprintf("p%d", i), "ATTRS", fmt.Sprintf(`{"i":%d}`, i), "KEY", fmt.Sprintf("k%d", i)).Int64()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		if i%3 == 0 {
			if err := sc.Do(ctx, "MEM.REWARD", name, 1, id).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := sc.Do(ctx, "MEM.SNAPSHOT", name, "before").Err(); err != nil {
		t.Fatal(err)
	}

	// A client writes all along: adds (with ids of its own, so that a
	// lost or doubled add shows) and rewards, retrying TRYAGAIN; once the
	// source has dropped the collection it writes to the target.
	var (
		mu    sync.Mutex // guards acked, tryagain, onDst
		acked []int64
		tries int
		onDst bool
	)
	stop := make(chan struct{})
	done := make(chan struct{})
	dc := waitLeader(t, dst).client(t)
	go func() {
		defer close(done)
		for i := int64(1000); ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			// Each write is retried until acknowledged: on TRYAGAIN
			// (paused: nothing was applied), and on the target once the
			// source has dropped the collection. Anything else fails.
			write := func(args ...any) bool {
				for attempt := 0; attempt < 5000; attempt++ {
					mu.Lock()
					c := sc
					if onDst {
						c = dc
					}
					mu.Unlock()
					err := c.Do(ctx, args...).Err()
					switch {
					case err == nil:
						return true
					case strings.HasPrefix(err.Error(), "TRYAGAIN"):
						mu.Lock()
						tries++
						mu.Unlock()
						time.Sleep(time.Millisecond)
					case strings.Contains(err.Error(), "no such collection") && !onDst:
						mu.Lock()
						onDst = true
						mu.Unlock()
					default:
						t.Errorf("%v: %v", args, err)
						return false
					}
				}
				t.Errorf("%v: still refused", args)
				return false
			}
			if !write("MEM.ADD", name, "VALUES", 4, 0.1, float64(i%5)/5, 0.3, 0.2, "ID", i, "PAYLOAD", "w"+strconv.FormatInt(i, 10)) ||
				!write("MEM.REWARD", name, 0.5, i) {
				return
			}
			mu.Lock()
			acked = append(acked, i)
			mu.Unlock()
		}
	}()

	d := &moveDriver{t: t, src: src, dst: dst, name: name, id: "m1", chunk: 4096}
	x := d.export()
	cursor := x
	for round := 0; round < 10; round++ {
		time.Sleep(20 * time.Millisecond) // let the writer write
		if d.delta(&cursor, 1<<62, round == 0) == 0 && round > 2 {
			break
		}
	}
	p := d.do(src, "MEMRL.PAUSE", name, d.id).(int64)
	if again := d.do(src, "MEMRL.PAUSE", name, d.id).(int64); again != p {
		t.Fatalf("a repeated PAUSE says %d, the first %d", again, p)
	}
	for cursor < p {
		d.delta(&cursor, p, false)
	}
	// Writes are refused while paused.
	if err := sc.Do(ctx, "MEM.ADD", name, "VALUES", 4, 1, 1, 1, 1, "ID", 999).Err(); err == nil || !strings.HasPrefix(err.Error(), "TRYAGAIN") {
		t.Fatalf("a write while paused: %v", err)
	}
	d.do(dst, "MEMRL.IMPORT", "SEAL", name, d.id, p)
	// Equal in every field, the writer's memories included.
	mu.Lock()
	all := append(append([]int64(nil), ids...), acked...)
	mu.Unlock()
	dl := waitLeader(t, dst)
	want := collState(t, sc, name, all)
	if got := collState(t, dl.client(t), name, all); got != want {
		t.Fatalf("the target differs from the source at the pause:\n%s", firstDiff(got, want))
	}
	srcDigest := digest(t, sl.node.DB())
	dstDigest := sameState(t, dl, dst)
	if srcDigest != dstDigest {
		t.Fatalf("engine state differs: %s", firstDiff(dstDigest, srcDigest))
	}
	d.do(src, "MEMRL.FINISH", name, d.id)
	d.do(dst, "MEMRL.IMPORT", "DONE", name, d.id)
	if v := d.do(src, "MEM.LIST"); len(v.([]any)) != 0 {
		t.Fatalf("the source still lists %v", v)
	}
	// The writer goes on at the target.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		n, ok := len(acked), onDst
		mu.Unlock()
		if ok && n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the writer did not move to the target")
		}
	}
	time.Sleep(50 * time.Millisecond)
	close(stop)
	<-done
	mu.Lock()
	defer mu.Unlock()
	fc := dl.client(t)
	for _, id := range acked {
		v, err := fc.Do(ctx, "MEM.GET", name, id).Result()
		if err != nil {
			t.Fatalf("acknowledged memory %d lost: %v", id, err)
		}
		m := fmt.Sprint(v)
		if !strings.Contains(m, "visits 1 ") {
			t.Fatalf("memory %d: want one visit (its reward applied once): %v", id, m)
		}
	}
	if n, err := fc.Do(ctx, "MEM.COUNT", name).Int64(); err != nil || n != int64(len(ids)+len(acked)) {
		t.Fatalf("MEM.COUNT %d, %v; want %d", n, err, len(ids)+len(acked))
	}
	sameState(t, dl, dst)
	t.Logf("%d writes acknowledged during the move, %d TRYAGAIN while paused; X=%d P=%d", len(acked), tries, x, p)
	if v := d.do(dst, "MEMRL.MOVES"); len(v.([]any)) != 0 {
		t.Fatalf("move records left on the target: %v", v)
	}
}

// TestMoveDiscard: an unfinished import is rolled back (DISCARD) whether
// staged or committed, a BEGIN of a new move supersedes a stale staging,
// and out-of-order chunks are refused.
func TestMoveDiscard(t *testing.T) {
	src, dst := startMoveGroup(t, 1), startMoveGroup(t, 1)
	ctx := context.Background()
	sc := waitLeader(t, src).client(t)
	if err := sc.Do(ctx, "MEM.CREATE", "c", "DIM", 2).Err(); err != nil {
		t.Fatal(err)
	}
	if err := sc.Do(ctx, "MEM.ADD", "c", "VALUES", 2, 1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	d := &moveDriver{t: t, src: src, dst: dst, name: "c", id: "a1", chunk: 1 << 20}
	dc := waitLeader(t, dst).client(t)
	d.do(dst, "MEMRL.IMPORT", "BEGIN", "c", "a0")
	if err := dc.Do(ctx, "MEMRL.IMPORT", "CHUNK", "a0", 1, "x").Err(); err == nil || !strings.Contains(err.Error(), "out of order") {
		t.Fatalf("chunk 1 before 0: %v", err)
	}
	d.do(dst, "MEMRL.IMPORT", "CHUNK", "a0", 0, "garbage")
	d.export() // BEGIN a1 drops a0's staging
	if v := d.do(dst, "MEMRL.MOVES"); fmt.Sprint(v) != "[[import c a1 committed 0]]" {
		t.Fatalf("MEMRL.MOVES: %v", v)
	}
	staged, _ := filepath.Glob(filepath.Join(waitLeader(t, dst).node.DB().Dir(), moveStageDir, "*"))
	if len(staged) != 0 {
		t.Fatalf("staged files left: %v", staged)
	}
	d.do(dst, "MEMRL.IMPORT", "DISCARD", "c", "a1")
	if v := d.do(dst, "MEM.LIST"); len(v.([]any)) != 0 {
		t.Fatalf("after DISCARD the target lists %v", v)
	}
	if v := d.do(dst, "MEMRL.MOVES"); len(v.([]any)) != 0 {
		t.Fatalf("after DISCARD: %v", v)
	}
	// A pause rolled back: writes go on at the source.
	d.do(src, "MEMRL.PAUSE", "c", "a1")
	if err := sc.Do(ctx, "MEM.ADD", "c", "VALUES", 2, 1, 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "TRYAGAIN") {
		t.Fatalf("paused: %v", err)
	}
	d.do(src, "MEMRL.UNPAUSE", "c", "a1")
	if err := sc.Do(ctx, "MEM.ADD", "c", "VALUES", 2, 1, 0).Err(); err != nil {
		t.Fatalf("unpaused: %v", err)
	}
}

// TestMoveStateSurvivesSnapshot: a pause and a staged import survive a
// raft snapshot installed on a lagging follower, and a restart of the
// whole group.
func TestMoveStateSurvivesSnapshot(t *testing.T) {
	nodes := startMoveGroup(t, 3)
	ctx := context.Background()
	l := waitLeader(t, nodes)
	c := l.client(t)
	if err := c.Do(ctx, "MEM.CREATE", "a", "DIM", 2).Err(); err != nil {
		t.Fatal(err)
	}
	var lag *testNode
	for _, tn := range nodes {
		if tn != l {
			lag = tn
		}
	}
	lag.stop(t)
	for _, args := range [][]any{{"MEMRL.PAUSE", "a", "p1"}, {"MEMRL.IMPORT", "BEGIN", "b", "i1"}, {"MEMRL.IMPORT", "CHUNK", "i1", 0, "abc"}} {
		if err := c.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	if err := c.Do(ctx, "RAFT.SNAPSHOT", "KEEP", 0).Err(); err != nil {
		t.Fatal(err)
	}
	lag.relisten(t)
	lag.start(t, nil)
	waitCaughtUp(t, l, nodes)
	want := "[[import b i1 staging 0] [paused a p1 "
	for _, tn := range nodes {
		tn.node.moves.mu.Lock()
		tab, err := tn.node.moves.tablesLocked(tn.node.DB())
		var got string
		if err == nil {
			got = fmt.Sprint(len(tab.paused), tab.imports["b"].chunks, tab.imports["b"].bytes)
		}
		tn.node.moves.mu.Unlock()
		if err != nil || got != "1 1 3" {
			t.Fatalf("%s: move state %q, %v", tn.id, got, err)
		}
		data, err := os.ReadFile(stagePath(tn.node.DB(), "i1"))
		if err != nil || string(data) != "abc" {
			t.Fatalf("%s: staged %q, %v", tn.id, data, err)
		}
	}
	v, err := c.Do(ctx, "MEMRL.MOVES").Result()
	if err != nil || !strings.HasPrefix(fmt.Sprint(v), want) {
		t.Fatalf("MEMRL.MOVES: %v, %v", v, err)
	}
	// The follower that installed the snapshot refuses writes to "a" as
	// the leader does: a write committed now is refused by all.
	if err := c.Do(ctx, "MEM.ADD", "a", "VALUES", 2, 1, 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "TRYAGAIN") {
		t.Fatalf("paused write: %v", err)
	}
	sameState(t, l, nodes)
}

// TestMoveFileCorrupt: moves.tsv round-trips, and every damaged byte, a
// cut and another version are refused.
func TestMoveFileCorrupt(t *testing.T) {
	in := moveTables{
		paused:  map[string]pauseRec{"a": {moveID: "m1", index: 42}},
		imports: map[string]importRec{"{x}.b": {moveID: "m2", state: importCommitted, chunks: 3, bytes: 99, pos: replayPos{7, 2}}},
	}
	data := encodeMoveFile(in)
	out := moveTables{paused: map[string]pauseRec{}, imports: map[string]importRec{}}
	if err := decodeMoveFile(data, &out); err != nil || !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip: %+v, %v", out, err)
	}
	for i := range data {
		bad := append([]byte(nil), data...)
		bad[i] ^= 0x20
		o := moveTables{paused: map[string]pauseRec{}, imports: map[string]importRec{}}
		if err := decodeMoveFile(bad, &o); err == nil {
			t.Fatalf("byte %d damaged: accepted", i)
		}
	}
	for n := 0; n < len(data); n++ {
		o := moveTables{paused: map[string]pauseRec{}, imports: map[string]importRec{}}
		if err := decodeMoveFile(data[:n], &o); err == nil {
			t.Fatalf("cut at %d: accepted", n)
		}
	}
	v2 := []byte(strings.Replace(string(data), moveHeader, "memrl-moves 2", 1))
	o := moveTables{paused: map[string]pauseRec{}, imports: map[string]importRec{}}
	if err := decodeMoveFile(v2, &o); err == nil {
		t.Fatal("version 2 accepted")
	}
}
