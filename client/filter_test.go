package client_test

import (
	"slices"
	"testing"

	"github.com/memrl/memrl/client"
)

// filterPool adds 6 memories with attributes user u1/u2 alternating and
// step 1..6, in a collection indexing "user".
func filterPool(t *testing.T, c *client.Client) string {
	t.Helper()
	name := newColl(t, c, 2, &client.CreateOptions{Metric: client.L2, Indexed: []string{"user"}})
	var items []client.AddItem
	for i := range 6 {
		items = append(items, client.AddItem{Vector: []float32{float32(i), 0}, AddOptions: client.AddOptions{
			Attrs: map[string]any{"user": []string{"u1", "u2"}[i%2], "step": i + 1},
		}})
	}
	if _, err := c.MAdd(ctx, name, items); err != nil {
		t.Fatal(err)
	}
	return name
}

func TestFilters(t *testing.T) {
	c := newClient(t, "")
	name := filterPool(t, c)
	rs, err := c.Retrieve(ctx, name, []float32{0, 0}, &client.RetrieveOptions{K2: 10, Lambda: ptr(0.0), Filter: `.user == "u2"`})
	if err != nil || !slices.Equal(ids(rs), []int64{2, 4, 6}) {
		t.Fatalf("Retrieve FILTER = %v, %v; want [2 4 6]", ids(rs), err)
	}
	if n, err := c.CountFilter(ctx, name, `.step >= 3 and .user == "u1"`); err != nil || n != 2 {
		t.Fatalf("CountFilter = %d, %v; want 2", n, err)
	}
	var got []int64
	for m, err := range c.ScanAll(ctx, name, &client.ScanOptions{Count: 1, Filter: `.step > 4`}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m.ID)
	}
	if !slices.Equal(got, []int64{5, 6}) {
		t.Fatalf("ScanAll FILTER = %v, want [5 6]", got)
	}
	if err := c.IndexAdd(ctx, name, "step"); err != nil {
		t.Fatal(err)
	}
	if err := c.IndexAdd(ctx, name, "step"); err != nil {
		t.Fatalf("IndexAdd of an indexed field: %v", err)
	}
	if f, err := c.IndexList(ctx, name); err != nil || !slices.Equal(f, []string{"step", "user"}) {
		t.Fatalf("IndexList = %v, %v", f, err)
	}
	if n, err := c.CountFilter(ctx, name, `.step >= 3 and .user == "u1"`); err != nil || n != 2 {
		t.Fatalf("CountFilter with both fields indexed = %d, %v; want 2", n, err)
	}
	if err := c.IndexDrop(ctx, name, "user"); err != nil {
		t.Fatal(err)
	}
	if f, err := c.IndexList(ctx, name); err != nil || !slices.Equal(f, []string{"step"}) {
		t.Fatalf("IndexList after IndexDrop = %v, %v", f, err)
	}
	wantIs(t, "IndexAdd of a bad name", c.IndexAdd(ctx, name, "a..b"), client.ErrBadParam)
	_, err = c.IndexList(ctx, "nope")
	wantIs(t, "IndexList nope", err, client.ErrNoCollection)
	wantIs(t, "Create INDEXED a bad name", c.Create(ctx, "badidx", 2, &client.CreateOptions{Indexed: []string{"ok", "no way"}}), client.ErrBadParam)
	if n, err := c.DelFilter(ctx, name, `.user == "u1"`); err != nil || n != 3 {
		t.Fatalf("DelFilter = %d, %v; want 3", n, err)
	}
	if n, err := c.Count(ctx, name); err != nil || n != 3 {
		t.Fatalf("Count after DelFilter = %d, %v; want 3", n, err)
	}

	// Bad filters: typed, and nothing changes.
	_, err = c.Retrieve(ctx, name, []float32{0, 0}, &client.RetrieveOptions{Filter: `.user ==`})
	wantIs(t, "Retrieve with a bad filter", err, client.ErrFilter)
	_, err = c.DelFilter(ctx, name, `(.step > 1`)
	wantIs(t, "DelFilter with a bad filter", err, client.ErrFilter)
	_, err = c.CountFilter(ctx, name, `.step > "a"`)
	wantIs(t, "CountFilter with a type error", err, client.ErrFilter)
	_, err = c.CountFilter(ctx, name, "")
	wantIs(t, "CountFilter with an empty filter", err, client.ErrFilter)
	_, err = c.Scan(ctx, name, "0", &client.ScanOptions{Filter: `not`})
	wantIs(t, "Scan with a bad filter", err, client.ErrFilter)
	if n, _ := c.Count(ctx, name); n != 3 {
		t.Fatalf("bad filters changed the collection: %d memories", n)
	}
	_, err = c.DelFilter(ctx, "nope", `.a == 1`)
	wantIs(t, "DelFilter nope", err, client.ErrNoCollection)
}

func TestFiltersPipelined(t *testing.T) {
	c := newClient(t, "")
	name := filterPool(t, c)
	var del, left *client.Cmd[int64]
	var fields *client.Cmd[[]string]
	err := c.TxPipelined(ctx, func(p *client.Pipeline) error {
		p.IndexAdd(ctx, name, "step")
		del = p.DelFilter(ctx, name, `.step <= 2`)
		left = p.CountFilter(ctx, name, `.user == "u2"`)
		fields = p.IndexList(ctx, name)
		p.IndexDrop(ctx, name, "step")
		return nil
	})
	if err != nil || del.Val() != 2 || left.Val() != 2 || !slices.Equal(fields.Val(), []string{"step", "user"}) {
		t.Fatalf("del %d left %d fields %v: %v", del.Val(), left.Val(), fields.Val(), err)
	}
}
