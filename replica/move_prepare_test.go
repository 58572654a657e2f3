package replica

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// holdPreparations makes every preparation (MEMRL.IMPORT PREPARE's job)
// wait until release is called; held receives each job's move id as it
// starts waiting. Register it after the groups, so that its cleanup
// releases the jobs before the nodes stop (stopping waits for them).
func holdPreparations(t *testing.T) (held chan string, release func()) {
	held = make(chan string, 64)
	gate := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	prepareHook = func(id string) {
		held <- id
		<-gate
	}
	t.Cleanup(func() {
		release()
		prepareHook = nil
	})
	return held, release
}

// TestImportPrepareOffApply: while an import is being prepared (held
// here by a hook until a write is acknowledged), writes to another
// collection of the target shard are acknowledged and every replica
// goes on applying; COMMIT, sent once the leader's preparation is done,
// makes the same collection visible on every replica. Before
// MEMRL.IMPORT PREPARE, the whole import ran inside COMMIT's apply, and
// every write committed after it waited for it.
func TestImportPrepareOffApply(t *testing.T) {
	src, dst := startMoveGroup(t, 1), startMoveGroup(t, 3)
	held, release := holdPreparations(t)
	ctx := context.Background()
	sc := waitLeader(t, src).client(t)
	if err := sc.Do(ctx, "MEM.CREATE", "big", "DIM", 8).Err(); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for i := range 300 {
		id, err := sc.Do(ctx, "MEM.ADD", "big", "VALUES", 8, float64(i%7)/7, 0.5, float64(i%3)/3, 0.1, 1, 0, float64(i%11)/11, 0.2,
			"PAYLOAD", fmt.Sprintf("p%d", i), "KEY", fmt.Sprintf("k%d", i)).Int64()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := sc.Do(ctx, "MEM.REWARD", "big", 1, ids[1]).Err(); err != nil {
		t.Fatal(err)
	}
	l := waitLeader(t, dst)
	dc := l.client(t)
	if err := dc.Do(ctx, "MEM.CREATE", "other", "DIM", 2).Err(); err != nil {
		t.Fatal(err)
	}

	d := &moveDriver{t: t, src: src, dst: dst, name: "big", id: "b1", chunk: 4096}
	x, seq := d.stage()
	d.do(dst, "MEMRL.IMPORT", "PREPARE", d.id, seq)
	// Every replica starts its preparation as it applies PREPARE.
	deadline := time.After(60 * time.Second)
	for range dst {
		select {
		case id := <-held:
			if id != d.id {
				t.Fatalf("a preparation of %q", id)
			}
		case <-deadline:
			t.Fatal("not every replica started preparing in 60 s")
		}
	}
	if v := d.do(dst, "MEMRL.IMPORTREADY", d.id).(int64); v != 0 {
		t.Fatalf("MEMRL.IMPORTREADY while held: %d", v)
	}
	// Held: writes to another collection are acknowledged, and every
	// replica applies them (none waits for its preparation).
	for i := range 20 {
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		err := dc.Do(wctx, "MEM.ADD", "other", "VALUES", 2, float64(i), 1).Err()
		cancel()
		if err != nil {
			t.Fatalf("a write to another collection while the import is prepared: %v", err)
		}
	}
	waitCaughtUp(t, l, dst)
	if v, err := dc.Do(ctx, "MEM.LIST").Result(); err != nil || fmt.Sprint(v) != "[other]" {
		t.Fatalf("before COMMIT the target lists %v, %v", v, err)
	}
	release()
	d.waitReady()
	d.do(dst, "MEMRL.IMPORT", "COMMIT", d.id, seq, x)
	d.do(src, "MEMRL.EXPORTDONE", d.id)
	if v := d.do(dst, "MEMRL.MOVES"); fmt.Sprint(v) != "[[import big b1 committed 0]]" {
		t.Fatalf("MEMRL.MOVES: %v", v)
	}
	want := collState(t, sc, "big", ids)
	waitCaughtUp(t, l, dst)
	for _, tn := range dst {
		if got := collState(t, tn.client(t), "big", ids); got != want {
			t.Fatalf("%s holds another collection: %s", tn.id, firstDiff(got, want))
		}
	}
	sameState(t, l, dst)
}

// TestImportPrepareAfterSnapshot: a follower that installs a snapshot
// taken between PREPARE and COMMIT has no preparation; it prepares at
// COMMIT from the staged image the snapshot shipped, and holds what the
// others hold. A damaged image is refused alike by every replica.
func TestImportPrepareAfterSnapshot(t *testing.T) {
	src, dst := startMoveGroup(t, 1), startMoveGroup(t, 3)
	ctx := context.Background()
	sc := waitLeader(t, src).client(t)
	if err := sc.Do(ctx, "MEM.CREATE", "c", "DIM", 2).Err(); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for i := range 50 {
		id, err := sc.Do(ctx, "MEM.ADD", "c", "VALUES", 2, float64(i), 1, "PAYLOAD", fmt.Sprint(i)).Int64()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	l := waitLeader(t, dst)
	dc := l.client(t)
	var lag *testNode
	for _, tn := range dst {
		if tn != l {
			lag = tn
		}
	}

	// A damaged image: COMMIT is refused, on every replica alike.
	d := &moveDriver{t: t, src: src, dst: dst, name: "c", id: "bad", chunk: 1 << 20}
	d.do(dst, "MEMRL.IMPORT", "BEGIN", "c", "bad")
	d.do(dst, "MEMRL.IMPORT", "CHUNK", "bad", 0, "not an image")
	d.do(dst, "MEMRL.IMPORT", "PREPARE", "bad", 1)
	d.waitReady()
	if err := dc.Do(ctx, "MEMRL.IMPORT", "COMMIT", "bad", 1, 5).Err(); err == nil || !strings.Contains(err.Error(), "MEMRL.IMPORT COMMIT") {
		t.Fatalf("COMMIT of a damaged image: %v", err)
	}
	waitCaughtUp(t, l, dst)
	for _, tn := range dst {
		tn.node.moves.mu.Lock()
		tab, err := tn.node.moves.tablesLocked(tn.node.DB())
		n := -1
		if err == nil {
			n = len(tab.imports)
		}
		tn.node.moves.mu.Unlock()
		if n != 0 || len(tn.node.DB().List()) != 0 {
			t.Fatalf("%s after a refused COMMIT: %d imports, collections %v", tn.id, n, tn.node.DB().List())
		}
	}

	// The good image; the lagging follower catches up by snapshot
	// between PREPARE and COMMIT.
	d.id = "good"
	x, seq := d.stage()
	lag.stop(t)
	d.do(dst, "MEMRL.IMPORT", "PREPARE", d.id, seq)
	if err := dc.Do(ctx, "RAFT.SNAPSHOT", "KEEP", 0).Err(); err != nil {
		t.Fatal(err)
	}
	lag.relisten(t)
	lag.start(t, nil)
	waitCaughtUp(t, l, dst)
	d.waitReady()
	d.do(dst, "MEMRL.IMPORT", "COMMIT", d.id, seq, x)
	want := collState(t, sc, "c", ids)
	waitCaughtUp(t, l, dst)
	for _, tn := range dst {
		if got := collState(t, tn.client(t), "c", ids); got != want {
			t.Fatalf("%s holds another collection: %s", tn.id, firstDiff(got, want))
		}
	}
	sameState(t, l, dst)
}
