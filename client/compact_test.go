package client_test

import (
	"testing"

	"github.com/memrl/memrl/client"
)

// TestCompact: CompactWait compacts a collection whose memories were half
// deleted and reports the figures; the deleted memories stay gone and the
// rest are whole; Compact starts one in the background.
func TestCompact(t *testing.T) {
	c := newClient(t, "")
	name := filterPool(t, c) // ids 1-6
	if _, err := c.Del(ctx, name, client.ID(1), client.ID(3), client.ID(5)); err != nil {
		t.Fatal(err)
	}
	in, err := c.Info(ctx, name)
	if err != nil || in.DeletedRows != 3 || in.DiskBytes <= 0 || in.Compacting || in.Snapshots != 0 || in.PrunePolicy != "" {
		t.Fatalf("Info before compaction = %+v, %v", in, err)
	}
	st, err := c.CompactWait(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if st.RowsBefore != 6 || st.RowsAfter != 3 || st.BytesAfter >= st.BytesBefore || st.Took < 0 {
		t.Fatalf("CompactWait = %+v", st)
	}
	got, err := c.MGet(ctx, name, []client.Ref{client.ID(1), client.ID(2), client.ID(3), client.ID(4)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != nil || got[2] != nil || got[1] == nil || got[3] == nil {
		t.Fatalf("after compaction: %v", got)
	}
	if n, _ := c.Count(ctx, name); n != 3 {
		t.Fatalf("count %d after compaction", n)
	}
	if after, err := c.Info(ctx, name); err != nil || after.DeletedRows != 0 || after.DiskBytes >= in.DiskBytes {
		t.Fatalf("Info after compaction = %+v, %v (before: %+v)", after, err, in)
	}
	if err := c.Compact(ctx, name); err != nil {
		t.Fatal(err)
	}
	if err := c.Compact(ctx, "nosuch"); err == nil {
		t.Fatal("Compact of a missing collection succeeded")
	}

	// A snapshot pins what is deleted after it: not reclaimable.
	if err := c.Snapshot(ctx, name, "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Del(ctx, name, client.ID(2)); err != nil {
		t.Fatal(err)
	}
	if in, err := c.Info(ctx, name); err != nil || in.DeletedRows != 0 || in.PinnedRows != 1 {
		t.Fatalf("Info with a pinned row = %+v, %v", in, err)
	}
}
