package engine

import (
	"bytes"
	"errors"
	"math/rand"
	"slices"
	"testing"

	"github.com/memrl/memrl/engine/filter"
	"github.com/memrl/memrl/vfs"
	"github.com/memrl/memrl/wal"
)

// replaceWant is what a memory must look like after the replaces of
// TestReplaceKeepsLearningState.
type replaceWant struct {
	vec     []float32
	attrs   string
	payload string
	q       float64
	visits  uint64
	hist    int
}

func checkReplacedMems(t *testing.T, what string, c *Collection, want map[string]replaceWant, ids map[string]uint64) {
	t.Helper()
	for key, w := range want {
		mi, err := c.GetRef(ByKey(key))
		if err != nil {
			t.Fatalf("%s: get %q: %v", what, key, err)
		}
		if mi.ID != ids[key] || !slices.Equal(mi.Vector, w.vec) || string(mi.Attrs) != w.attrs ||
			string(mi.Payload) != w.payload || mi.Q != w.q || mi.Visits != w.visits {
			t.Errorf("%s: %q = id %d vec %v attrs %q payload %q q %v visits %d; want id %d %+v",
				what, key, mi.ID, mi.Vector, mi.Attrs, mi.Payload, mi.Q, mi.Visits, ids[key], w)
		}
		h, err := c.History(ByKey(key), 100)
		if err != nil || len(h) != w.hist {
			t.Errorf("%s: history of %q: %d entries (%v), want %d", what, key, len(h), err, w.hist)
		}
		// The nearest memory to the new vector is this one, found once.
		opt := NewRetrieveOptions()
		opt.K1, opt.K2, opt.Lambda = 10, 10, 0
		res, err := c.Retrieve(w.vec, opt)
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != len(want) || res[0].ID != ids[key] || res[0].Sim != 0 {
			t.Errorf("%s: retrieve %q's vector: %+v", what, key, res)
		}
	}
	if n, _ := c.Count(); n != len(want) {
		t.Errorf("%s: %d memories, want %d", what, n, len(want))
	}
	if rep, err := c.Verify(); err != nil || rep.Err() != nil {
		t.Errorf("%s: Verify: %v %v", what, err, rep.Err())
	}
}

// TestReplaceKeepsLearningState: Replace (MEM.SETVECTOR) and an add with
// Replace (MEM.ADD … REPLACE) give a memory a new vector, attributes and
// payload in place: its id, key, Q, visits and history stay; the old
// vector is no longer found, the attribute index follows; bad input
// changes nothing; and all of it survives a crash (from the log), a full
// and a delta checkpoint, and a compaction.
func TestReplaceKeepsLearningState(t *testing.T) {
	fs := vfs.NewMemFS()
	db, c := openAttrsDB(t, fs, Options{})
	if err := c.IndexField("tag", true); err != nil {
		t.Fatal(err)
	}
	ids := map[string]uint64{}
	for i, key := range []string{"a", "b", "c"} {
		id, err := c.Add(AddRequest{Vector: []float32{float32(i), 0, 0, 0}, Key: key,
			Attrs: []byte(`{"tag":"old"}`), Payload: []byte("old")})
		if err != nil {
			t.Fatal(err)
		}
		ids[key] = id
	}
	if _, err := c.Reward(1, []uint64{ids["a"], ids["b"]}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Reward(0, []uint64{ids["a"]}, nil); err != nil {
		t.Fatal(err)
	}
	qa, _ := c.Get(ids["a"])
	qb, _ := c.Get(ids["b"])

	// A vector alone: attributes and payload kept.
	if _, err := c.Replace(ByKey("a"), ReplaceRequest{Vector: []float32{10, 0, 0, 0}}); err != nil {
		t.Fatal(err)
	}
	// Everything, by an upsert of an existing key.
	id, err := c.Add(AddRequest{Vector: []float32{20, 0, 0, 0}, Key: "b", Replace: true, Q: 0.9, HasQ: true,
		Attrs: []byte(`{"tag":"new"}`), Payload: []byte("new")})
	if err != nil || id != ids["b"] {
		t.Fatalf("upsert of b: id %d, %v; want %d", id, err, ids["b"])
	}
	// An upsert of a new key adds.
	id, err = c.Add(AddRequest{Vector: []float32{30, 0, 0, 0}, Key: "d", Replace: true})
	if err != nil {
		t.Fatal(err)
	}
	ids["d"] = id
	// Bad input changes nothing.
	bad := []struct {
		name string
		want error
		do   func() error
	}{
		{"dimension", ErrDimension, func() error {
			_, err := c.Replace(ByKey("c"), ReplaceRequest{Vector: []float32{1, 2}})
			return err
		}},
		{"attrs", ErrBadAttrs, func() error {
			_, err := c.Replace(ByKey("c"), ReplaceRequest{Vector: []float32{1, 2, 3, 4}, Attrs: []byte(`[1]`), SetAttrs: true})
			return err
		}},
		{"payload", ErrPayloadTooLarge, func() error {
			_, err := c.Replace(ByKey("c"), ReplaceRequest{Vector: []float32{1, 2, 3, 4}, Payload: make([]byte, MaxPayload+1), SetPayload: true})
			return err
		}},
		{"unknown", ErrNoMemory, func() error {
			_, err := c.Replace(ByKey("zz"), ReplaceRequest{Vector: []float32{1, 2, 3, 4}})
			return err
		}},
		{"upsert without key", ErrBadParam, func() error {
			_, err := c.Add(AddRequest{Vector: []float32{1, 2, 3, 4}, Replace: true})
			return err
		}},
		{"upsert with ID", ErrBadParam, func() error {
			_, err := c.Add(AddRequest{Vector: []float32{1, 2, 3, 4}, Key: "c", Replace: true, ID: 9, HasID: true})
			return err
		}},
		{"upsert in a batch", ErrBadParam, func() error {
			_, err := c.AddBatch([]AddRequest{{Vector: []float32{1, 2, 3, 4}, Key: "c", Replace: true}, {Vector: []float32{1, 2, 3, 4}}})
			return err
		}},
	}
	for _, b := range bad {
		if err := b.do(); !errors.Is(err, b.want) {
			t.Errorf("%s: %v, want %v", b.name, err, b.want)
		}
	}
	want := map[string]replaceWant{
		"a": {[]float32{10, 0, 0, 0}, `{"tag":"old"}`, "old", qa.Q, 2, 2},
		"b": {[]float32{20, 0, 0, 0}, `{"tag":"new"}`, "new", qb.Q, 1, 1},
		"c": {[]float32{2, 0, 0, 0}, `{"tag":"old"}`, "old", c.cfg.QInit, 0, 0},
		"d": {[]float32{30, 0, 0, 0}, "", "", c.cfg.QInit, 0, 0},
	}
	checkFilter := func(what string, c *Collection) {
		t.Helper()
		e, err := filter.Parse(`.tag == "new"`)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := c.CountFilter(e); err != nil || n != 1 {
			t.Errorf("%s: %d memories with tag new (%v), want 1", what, n, err)
		}
	}
	checkReplacedMems(t, "live", c, want, ids)
	checkFilter("live", c)

	fs, db = crashOpen(t, fs, 1)
	c, _ = db.Collection("c")
	checkReplacedMems(t, "replayed", c, want, ids)
	checkFilter("replayed", c)

	if err := db.CheckpointFull(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Replace(ByKey("c"), ReplaceRequest{Vector: []float32{40, 0, 0, 0}, Attrs: []byte(`{"tag":"c"}`), SetAttrs: true}); err != nil {
		t.Fatal(err)
	}
	want["c"] = replaceWant{[]float32{40, 0, 0, 0}, `{"tag":"c"}`, "old", c.cfg.QInit, 0, 0}
	if err := db.Checkpoint(); err != nil { // a delta holding c
		t.Fatal(err)
	}
	fs, db = crashOpen(t, fs, 2)
	c, _ = db.Collection("c")
	checkReplacedMems(t, "delta checkpoint", c, want, ids)

	if _, err := c.Compact(); err != nil {
		t.Fatal(err)
	}
	checkReplacedMems(t, "compacted", c, want, ids)
	_, db = crashOpen(t, fs, 3)
	c, _ = db.Collection("c")
	checkReplacedMems(t, "compacted and reopened", c, want, ids)
	db.Close()
}

// TestReplaceHeldBySnapshot: a memory a snapshot holds keeps its vector
// (ErrReplaceHeld) until the snapshot is deleted.
func TestReplaceHeldBySnapshot(t *testing.T) {
	fs := vfs.NewMemFS()
	db, c := openAttrsDB(t, fs, Options{})
	defer db.Close()
	if _, err := c.Add(AddRequest{Vector: []float32{1, 0, 0, 0}, Key: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Snapshot("s"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Replace(ByKey("a"), ReplaceRequest{Vector: []float32{2, 0, 0, 0}}); !errors.Is(err, ErrReplaceHeld) {
		t.Fatalf("replace of a held memory: %v, want ErrReplaceHeld", err)
	}
	if mi := mustGet(t, c, ByKey("a")); mi.Vector[0] != 1 {
		t.Fatalf("vector changed to %v", mi.Vector)
	}
	if _, err := c.DeleteSnapshot("s"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Replace(ByKey("a"), ReplaceRequest{Vector: []float32{2, 0, 0, 0}}); err != nil {
		t.Fatal(err)
	}
}

// TestReplaceWithIndex: in a collection searched through its IVF-PQ index,
// replaced vectors are found at their new place and never at the old one,
// before and after a crash.
func TestReplaceWithIndex(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an index")
	}
	fs := vfs.NewMemFS()
	opts := Options{FS: fs, Sync: wal.SyncAlways, CheckpointInterval: -1, CheckpointBytes: -1, Logf: t.Logf}
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Dim: 16, Metric: L2, Alpha: 0.3, Index: IndexConfig{Kind: IndexIVFPQ, NList: 8, TrainThreshold: 600}}
	c := mustColl(t, db, "c", cfg)
	rng := rand.New(rand.NewSource(1))
	vecs := clustered(rng, 800, 16)
	for i, v := range vecs {
		if _, err := c.Add(AddRequest{Vector: v, ID: uint64(i + 1), HasID: true, Key: string(rune('A'+i%26)) + string(rune('0'+i/26%10)) + string(rune('a'+i/260))}); err != nil {
			t.Fatal(err)
		}
	}
	waitIndexed(t, c)
	moved := map[uint64][]float32{}
	for id := uint64(1); id <= 50; id++ {
		nv := slices.Clone(vecs[(id+400)%800])
		for j := range nv {
			nv[j] += 0.01 * float32(id)
		}
		if _, err := c.Replace(ByID(id), ReplaceRequest{Vector: nv}); err != nil {
			t.Fatal(err)
		}
		moved[id] = nv
	}
	check := func(what string, c *Collection) {
		t.Helper()
		opt := NewRetrieveOptions()
		opt.K1, opt.K2, opt.Lambda, opt.NProbe = 5, 5, 0, 8
		for id, v := range moved {
			res, err := c.Retrieve(v, opt)
			if err != nil {
				t.Fatal(err)
			}
			if len(res) == 0 || res[0].ID != id {
				t.Errorf("%s: nearest to memory %d's new vector: %+v", what, id, res)
			}
			old, err := c.Retrieve(vecs[id-1], opt)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range old {
				if r.ID == id && r.Sim == 0 {
					t.Errorf("%s: memory %d found at its old vector", what, id)
				}
			}
		}
	}
	check("live", c)
	db.Close()
	opts.FS = fs.Crash(vfs.DropUnsynced, rand.New(rand.NewSource(1)))
	db, err = Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, _ = db.Collection("c")
	check("reopened", c)
}

// TestReplaceRecordDamaged: a replace record whose body is cut short, runs
// long, or carries unknown flags is refused as malformed (the WAL's
// checksum catches damage on disk; this is the layer behind it).
func TestReplaceRecordDamaged(t *testing.T) {
	good := encodeReplace(replaceRec{uid: 1, id: 2, row: 3, flags: replaceAttrs | replacePayload,
		attrs: []byte(`{"a":1}`), payOff: 7, payload: []byte("pp"), vec: []float32{1, 2}})
	if r, err := decodeReplace(good, 2); err != nil || !bytes.Equal(encodeReplace(r), good) {
		t.Fatalf("good record: %v", err)
	}
	flags := bytes.Clone(good)
	flags[1+8+8+4] |= 0x80
	for name, b := range map[string][]byte{
		"short":   good[:len(good)-1],
		"long":    append(bytes.Clone(good), 0),
		"flags":   flags,
		"no body": good[:1],
	} {
		if _, err := decodeReplace(b, 2); !errors.Is(err, errBadRecord) {
			t.Errorf("%s: %v, want errBadRecord", name, err)
		}
	}
}

// BenchmarkOverwrite is the cost of overwriting a keyed memory's vector,
// attributes and payload (dim 128, a 200-byte payload, about 80 bytes of
// attributes): as an upsert (AddRequest.Replace, one record, learning
// state kept) and the old way, a delete and an add (two records, a new id,
// learning state lost).
func BenchmarkOverwrite(b *testing.B) {
	for _, how := range []string{"replace", "delete+add"} {
		b.Run(how, func(b *testing.B) {
			c, _ := benchColl(b, 0, 128)
			v := make([]float32, 128)
			p := make([]byte, 200)
			attrs := []byte(`{"user_id": "u-1234", "session_id": "s-99", "status": "ok", "tags": ["plan", "tool"], "step": 3}`)
			const key = "3f2a9c1e-0000-4000-8000-000000000001"
			v[1] = 1
			if _, err := c.Add(AddRequest{Vector: v, Key: key}); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				v[0] = float32(i + 1)
				if how == "replace" {
					if _, err := c.Add(AddRequest{Vector: v, Payload: p, Attrs: attrs, Key: key, Replace: true}); err != nil {
						b.Fatal(err)
					}
					continue
				}
				if _, _, err := c.DeleteRefsDeferred([]Ref{ByKey(key)}); err != nil {
					b.Fatal(err)
				}
				if _, err := c.Add(AddRequest{Vector: v, Payload: p, Attrs: attrs, Key: key}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
