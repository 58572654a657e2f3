package client_test

import (
	"errors"
	"testing"
	"time"

	"github.com/memrl/memrl/client"
)

// TestSnapshotRollback: Snapshot, Snapshots, Rollback and DelSnapshot
// against the server: a deleted memory and a reward are undone, and the
// errors match their sentinels.
func TestSnapshotRollback(t *testing.T) {
	c := newClient(t, "")
	name := filterPool(t, c) // 6 memories (ids 1-6), Q at QINIT 0
	if err := c.Snapshot(ctx, name, "base"); err != nil {
		t.Fatal(err)
	}
	if in, err := c.Info(ctx, name); err != nil || in.Snapshots != 1 {
		t.Fatalf("Info's Snapshots = %d, %v; want 1", in.Snapshots, err)
	}
	if err := c.Snapshot(ctx, name, "base"); !errors.Is(err, client.ErrSnapshotExists) {
		t.Fatalf("second Snapshot: %v", err)
	}
	if err := c.Snapshot(ctx, name, ""); !errors.Is(err, client.ErrBadSnapshotName) {
		t.Fatalf("empty name: %v", err)
	}
	list, err := c.Snapshots(ctx, name)
	if err != nil || len(list) != 1 || list[0].Name != "base" || list[0].Memories != 6 ||
		time.Since(list[0].Created) > time.Hour {
		t.Fatalf("Snapshots = %+v, %v", list, err)
	}
	if _, err := c.Reward(ctx, name, 1, client.ID(1)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Del(ctx, name, client.ID(2)); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Rollback(ctx, name, "base"); err != nil || n != 2 {
		t.Fatalf("Rollback = %d, %v; want 2", n, err)
	}
	got, err := c.MGet(ctx, name, []client.Ref{client.ID(1), client.ID(2)}, nil)
	if err != nil || got[0] == nil || got[1] == nil || got[0].Q != 0 || got[0].Visits != 0 {
		t.Fatalf("after Rollback: %+v, %v", got, err)
	}
	if _, err := c.Rollback(ctx, name, "nope"); !errors.Is(err, client.ErrNoSnapshot) {
		t.Fatalf("Rollback to an unknown snapshot: %v", err)
	}
	if ok, err := c.DelSnapshot(ctx, name, "base"); err != nil || !ok {
		t.Fatalf("DelSnapshot = %v, %v", ok, err)
	}
	if ok, err := c.DelSnapshot(ctx, name, "base"); err != nil || ok {
		t.Fatalf("second DelSnapshot = %v, %v", ok, err)
	}
}
