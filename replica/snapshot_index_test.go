package replica

import (
	"context"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// hasIndexFile reports whether an IVF-PQ index file is under dir.
func hasIndexFile(dir string) bool {
	found := false
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "ivfpq.idx" {
			found = true
		}
		return nil
	})
	return found
}

var trainedOn = regexp.MustCompile(`trained=(\d+)`)

// indexInfo returns collection name's MEM.INFO index text on tn.
func indexInfo(t *testing.T, tn *testNode, name string) string {
	t.Helper()
	c, err := tn.node.DB().Collection(name)
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info()
	if err != nil {
		t.Fatal(err)
	}
	return info.Index
}

// TestSnapshotShipsIndex: the IVF-PQ index travels in the snapshot with
// the vectors, so a replica emptied and caught up from a snapshot serves
// with the leader's index (trained on the same memories) at once instead
// of building its own: its index says the leader's training size, where a
// build of its own would have trained on every memory it holds.
func TestSnapshotShipsIndex(t *testing.T) {
	nodes := startGroup(t, 3)
	leader := waitLeader(t, nodes)
	ctx := context.Background()
	rdb := leader.client(t)
	if err := rdb.Do(ctx, "MEM.CREATE", "ix", "DIM", 4, "TRAIN", 256, "NLIST", 4).Err(); err != nil {
		t.Fatal(err)
	}
	add := func(first, n int) {
		pipe := rdb.Pipeline()
		for i := first; i < first+n; i++ {
			f := float64(i)
			pipe.Do(ctx, "MEM.ADD", "ix", "VALUES", 4, f, -f, f*f/100, 1, "ID", i)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	add(1, 300)
	// The leader builds its index and saves it.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if info := indexInfo(t, leader, "ix"); strings.HasPrefix(info, "ivfpq ") && !strings.Contains(info, "building") &&
			!strings.Contains(info, "retraining") && hasIndexFile(leader.dir) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("leader's index: %q, file saved: %v", indexInfo(t, leader, "ix"), hasIndexFile(leader.dir))
		}
	}
	want := trainedOn.FindStringSubmatch(indexInfo(t, leader, "ix"))
	if want == nil {
		t.Fatalf("leader's index: %q", indexInfo(t, leader, "ix"))
	}
	add(1000, 300) // more than the leader trained on, fewer than its retrain at 4×
	if err := rdb.Do(ctx, "RAFT.SNAPSHOT", "KEEP", 0).Err(); err != nil {
		t.Fatal(err)
	}
	var lag *testNode
	for _, tn := range nodes {
		if tn != leader {
			lag = tn
			break
		}
	}
	lag.stop(t)
	restartEmpty(t, lag, leader, nodes)
	info := indexInfo(t, lag, "ix")
	got := trainedOn.FindStringSubmatch(info)
	if !strings.HasPrefix(info, "ivfpq ") || got == nil || got[1] != want[1] {
		t.Fatalf("restored replica's index %q, want the leader's, trained=%s", info, want[1])
	}
	if !strings.Contains(info, "rows=600") {
		t.Fatalf("restored replica's index %q holds not every memory", info)
	}
}
