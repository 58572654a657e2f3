package client_test

import (
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/memrl/memrl/client"
	"github.com/memrl/memrl/server"
)

func TestMAddMGet(t *testing.T) {
	c := newClient(t, "")
	name := newColl(t, c, 2, &client.CreateOptions{Metric: client.L2})
	items := []client.AddItem{
		{Vector: []float32{0.5, 0.25}, AddOptions: client.AddOptions{Payload: []byte("FP32")}},
		{Vector: []float32{1, 2}, AddOptions: client.AddOptions{ID: ptr(int64(42)), Q: ptr(0.5), Key: "k42", Attrs: map[string]any{"a": "b"}}},
		{Vector: []float32{3, 4}, AddOptions: client.AddOptions{TTL: time.Hour}},
	}
	ids, err := c.MAdd(ctx, name, items)
	if err != nil || !slices.Equal(ids, []int64{1, 42, 43}) {
		t.Fatalf("MAdd = %v, %v; want [1 42 43]", ids, err)
	}
	ms, err := c.MGet(ctx, name, []client.Ref{client.ID(1), client.Key("k42"), client.ID(99), client.ID(43), client.ID(1)}, &client.GetOptions{WithVector: true})
	if err != nil || len(ms) != 5 || ms[2] != nil {
		t.Fatalf("MGet = %v, %v", ms, err)
	}
	if m := ms[0]; m.ID != 1 || string(m.Payload) != "FP32" || !slices.Equal(m.Vector, items[0].Vector) || ms[4].ID != 1 {
		t.Fatalf("MGet[0] = %+v", m)
	}
	if m := ms[1]; m.ID != 42 || m.Q != 0.5 || m.Key != "k42" || m.Attrs["a"] != "b" || !slices.Equal(m.Vector, []float32{1, 2}) {
		t.Fatalf("MGet[1] = %+v", m)
	}
	if m := ms[3]; m.Expires.Before(time.Now().Add(59*time.Minute)) || !slices.Equal(m.Vector, []float32{3, 4}) {
		t.Fatalf("MGet[3] = %+v", m)
	}
	if ms, err := c.MGet(ctx, name, client.IDs(42), nil); err != nil || ms[0].Vector != nil {
		t.Fatalf("MGet without WITHVECTOR = %+v, %v", ms, err)
	}
	// Get WITHVECTOR: L2 keeps the vector bit for bit.
	if m, err := c.Get(ctx, name, client.ID(43), &client.GetOptions{WithVector: true}); err != nil || !slices.Equal(m.Vector, []float32{3, 4}) {
		t.Fatalf("Get WITHVECTOR = %+v, %v", m, err)
	}
	// COSINE stores the vector normalised.
	cos := newColl(t, c, 2, nil)
	if _, err := c.Add(ctx, cos, []float32{3, 4}, nil); err != nil {
		t.Fatal(err)
	}
	if m, err := c.Get(ctx, cos, client.ID(1), &client.GetOptions{WithVector: true}); err != nil ||
		math.Abs(float64(m.Vector[0])-0.6) > 1e-6 || math.Abs(float64(m.Vector[1])-0.8) > 1e-6 {
		t.Fatalf("Get WITHVECTOR in COSINE = %+v, %v", m, err)
	}

	// All or nothing, and the error names the memory.
	_, err = c.MAdd(ctx, name, []client.AddItem{
		{Vector: []float32{1, 1}},
		{Vector: []float32{1, 1}, AddOptions: client.AddOptions{ID: ptr(int64(7))}},
		{Vector: []float32{1, 1, 1}},
	})
	wantIs(t, "MAdd with a 3-d memory 3", err, client.ErrDimension)
	var e *client.Error
	if !errors.As(err, &e) || e.Memory != 3 {
		t.Fatalf("MAdd error %v: Memory = %d, want 3", err, e.Memory)
	}
	_, err = c.MAdd(ctx, name, []client.AddItem{{Vector: []float32{1, 1}, AddOptions: client.AddOptions{ID: ptr(int64(7))}}, {Vector: []float32{1, 1}, AddOptions: client.AddOptions{ID: ptr(int64(7))}}})
	wantIs(t, "MAdd naming id 7 twice", err, client.ErrIDExists)
	if errors.As(err, &e); e.Memory != 2 {
		t.Fatalf("MAdd error %v: Memory = %d, want 2", err, e.Memory)
	}
	_, err = c.MAdd(ctx, name, []client.AddItem{{Vector: []float32{1, 1}, AddOptions: client.AddOptions{Key: "k42"}}})
	wantIs(t, "MAdd with a key in use", err, client.ErrKeyExists)
	_, err = c.MAdd(ctx, name, nil)
	wantIs(t, "MAdd of nothing", err, client.ErrWrongArity)
	if n, err := c.Count(ctx, name); err != nil || n != 3 {
		t.Fatalf("Count after refused batches = %d, %v; want 3", n, err)
	}
	_, err = c.MGet(ctx, "nope", client.IDs(1), nil)
	wantIs(t, "MGet nope", err, client.ErrNoCollection)
}

// TestMAddOOM: a batch whose working memory passes --maxmemory is refused
// whole (it arrived whole, so the connection stays usable).
func TestMAddOOM(t *testing.T) {
	c := newClient(t, startTestServer(t, server.Config{MaxMemory: 4 << 20}))
	if err := c.Create(ctx, "plans", 256, nil); err != nil {
		t.Fatal(err)
	}
	items := make([]client.AddItem, 1500) // 1.5 MB of vectors, 6 MB to reserve
	for i := range items {
		items[i].Vector = make([]float32, 256)
		items[i].Vector[i%256] = 1
	}
	_, err := c.MAdd(ctx, "plans", items)
	wantIs(t, "MAdd of 1.5 MB with maxmemory 4 MiB", err, client.ErrOOM)
	if n, err := c.Count(ctx, "plans"); err != nil || n != 0 {
		t.Fatalf("Count after an OOM batch = %d, %v; want 0", n, err)
	}
	if ids, err := c.MAdd(ctx, "plans", items[:100]); err != nil || len(ids) != 100 {
		t.Fatalf("a smaller batch: %d ids, %v", len(ids), err)
	}
}

func TestScanCount(t *testing.T) {
	c := newClient(t, "")
	name := newColl(t, c, 2, &client.CreateOptions{Metric: client.IP})
	var items []client.AddItem
	for i := range 25 {
		items = append(items, client.AddItem{Vector: []float32{float32(i), 1}, AddOptions: client.AddOptions{Payload: []byte{byte(i)}}})
	}
	if _, err := c.MAdd(ctx, name, items); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Del(ctx, name, client.IDs(5, 6)...); err != nil || n != 2 {
		t.Fatal(n, err)
	}
	if n, err := c.Count(ctx, name); err != nil || n != 23 {
		t.Fatalf("Count = %d, %v; want 23", n, err)
	}
	// Page by page.
	var got []int64
	cursor, pages := "0", 0
	for {
		p, err := c.Scan(ctx, name, cursor, &client.ScanOptions{Count: 10, WithVector: true})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, m := range p.Memories {
			if m.Payload != nil || m.Vector[0] != float32(m.ID-1) {
				t.Fatalf("scanned %+v: want no payload and its vector", m)
			}
			got = append(got, m.ID)
		}
		if cursor = p.Cursor; cursor == "0" {
			break
		}
		if pages > 10 {
			t.Fatal("the scan does not end")
		}
	}
	want := []int64{1, 2, 3, 4}
	for i := int64(7); i <= 25; i++ {
		want = append(want, i)
	}
	if !slices.Equal(got, want) || pages < 3 {
		t.Fatalf("scan in %d pages = %v, want %v", pages, got, want)
	}
	// The iterator.
	got = got[:0]
	for m, err := range c.ScanAll(ctx, name, &client.ScanOptions{Count: 7, WithPayload: true}) {
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Payload) != 1 || int64(m.Payload[0]) != m.ID-1 {
			t.Fatalf("scanned %+v: want its payload", m)
		}
		got = append(got, m.ID)
		if len(got) == 23 {
			break // stopping early must not scan on
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("ScanAll = %v", got)
	}
	for _, err := range c.ScanAll(ctx, "nope", nil) {
		wantIs(t, "ScanAll nope", err, client.ErrNoCollection)
	}
	_, err := c.Scan(ctx, name, "0", &client.ScanOptions{Count: 1001})
	wantIs(t, "Scan COUNT 1001", err, client.ErrBadParam)
	_, err = c.Count(ctx, "nope")
	wantIs(t, "Count nope", err, client.ErrNoCollection)
}

func TestBatchPipelined(t *testing.T) {
	c := newClient(t, "")
	name := newColl(t, c, 2, nil)
	var madd *client.Cmd[[]int64]
	var count *client.Cmd[int64]
	var mget *client.Cmd[[]*client.Memory]
	var scan *client.Cmd[client.ScanPage]
	err := c.TxPipelined(ctx, func(p *client.Pipeline) error {
		madd = p.MAdd(ctx, name, []client.AddItem{{Vector: []float32{1, 0}}, {Vector: []float32{0, 1}}})
		count = p.Count(ctx, name)
		mget = p.MGet(ctx, name, client.IDs(2, 3), nil)
		scan = p.Scan(ctx, name, "0", nil)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(madd.Val(), []int64{1, 2}) || count.Val() != 2 || len(mget.Val()) != 2 || mget.Val()[1] != nil ||
		scan.Val().Cursor != "0" || len(scan.Val().Memories) != 2 {
		t.Fatalf("madd %v count %v mget %v scan %+v", madd.Val(), count.Val(), mget.Val(), scan.Val())
	}
}
