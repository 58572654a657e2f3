package engine

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/memrl/memrl/vfs"
)

func TestValidateAttrs(t *testing.T) {
	deep := strings.Repeat(`{"a":`, MaxAttrsDepth) + "1" + strings.Repeat("}", MaxAttrsDepth)
	tooDeep := strings.Repeat(`{"a":`, MaxAttrsDepth) + "[1]" + strings.Repeat("}", MaxAttrsDepth)
	big := `{"a":"` + strings.Repeat("x", MaxAttrs) + `"}`
	for _, tc := range []struct {
		in, want string // want "" with ok: none; want "ERR": refused
	}{
		{"", ""},
		{`{}`, `{}`},
		{` { "user" : "u7", "step": 3, "tags": [ "plan", "x" ], "f": 1.50e3 } `, `{"user":"u7","step":3,"tags":["plan","x"],"f":1.50e3}`},
		{deep, deep},
		{tooDeep, "ERR"},
		{big, "ERR"},
		{`[1,2]`, "ERR"},
		{`"s"`, "ERR"},
		{`3`, "ERR"},
		{`null`, "ERR"},
		{`{`, "ERR"},
		{`{"a" 1}`, "ERR"},
		{`{"a":1,}`, "ERR"},
		{`{"a":1} x`, "ERR"},
		{`{"a":1}{}`, "ERR"},
		{`{'a':1}`, "ERR"},
		{"{\"a\":\"\xff\"}", "ERR"}, // invalid UTF-8
		{`{"a":1,"a":2}`, "ERR"},    // a field with two values
		{`{"a":1e999}`, "ERR"},      // beyond float64
		{`{"a":{"b":1,"b":2}}`, `{"a":{"b":1,"b":2}}`}, // only top-level keys must be unique
	} {
		got, err := validateAttrs([]byte(tc.in))
		if tc.want == "ERR" {
			if !errors.Is(err, ErrBadAttrs) {
				t.Errorf("validateAttrs(%.40q) = %q, %v; want ErrBadAttrs", tc.in, got, err)
			}
			continue
		}
		if err != nil || string(got) != tc.want {
			t.Errorf("validateAttrs(%.40q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// openAttrsDB opens a database on fs with one FLAT L2 collection "c".
func openAttrsDB(t *testing.T, fs *vfs.MemFS, opts Options) (*DB, *Collection) {
	t.Helper()
	o := crashOpts(fs)
	o.Now, o.SweepInterval = opts.Now, opts.SweepInterval
	db, err := Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	c, err := db.Collection("c")
	if errors.Is(err, ErrNoCollection) {
		cfg := NewConfig(4)
		cfg.Metric = L2
		cfg.Index.Kind = IndexFlat
		if err = db.Create("c", cfg); err == nil {
			c, err = db.Collection("c")
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return db, c
}

func mustGet(t *testing.T, c *Collection, r Ref) MemoryInfo {
	t.Helper()
	mi, err := c.GetRef(r)
	if err != nil {
		t.Fatalf("Get %v: %v", r, err)
	}
	return mi
}

// TestAttrsAndPayloadUpdates: attributes given at add, replaced, removed;
// a payload replaced in place; bad input refused with nothing changed;
// each survives a restart from the log, and from full and delta
// checkpoints after the log is gone.
func TestAttrsAndPayloadUpdates(t *testing.T) {
	fs := vfs.NewMemFS()
	db, c := openAttrsDB(t, fs, Options{})
	vec := []float32{1, 2, 3, 4}
	for id := uint64(1); id <= 4; id++ {
		req := AddRequest{Vector: vec, ID: id, HasID: true, Payload: []byte("old")}
		if id <= 2 {
			req.Attrs = []byte(`{ "user": "u1" }`)
		}
		if _, err := c.Add(req); err != nil {
			t.Fatal(err)
		}
	}
	if got := mustGet(t, c, ByID(1)).Attrs; string(got) != `{"user":"u1"}` {
		t.Fatalf("attrs stored %q, want them compact", got)
	}
	if _, err := c.Add(AddRequest{Vector: vec, Attrs: []byte(`[1]`)}); !errors.Is(err, ErrBadAttrs) {
		t.Fatalf("add with an array for attributes: %v", err)
	}
	if err := c.SetAttrs(ByID(1), []byte(`{"user":"u2","step":3}`)); err != nil {
		t.Fatal(err)
	}
	if err := c.SetAttrs(ByID(2), nil); err != nil { // removes them
		t.Fatal(err)
	}
	if err := c.SetAttrs(ByID(3), []byte(`{"user":`)); !errors.Is(err, ErrBadAttrs) {
		t.Fatalf("malformed JSON: %v", err)
	}
	if err := c.SetAttrs(ByID(99), []byte(`{}`)); !errors.Is(err, ErrNoMemory) {
		t.Fatalf("SetAttrs of an unknown memory: %v", err)
	}
	if err := c.SetPayload(ByID(3), []byte("a new, longer payload")); err != nil {
		t.Fatal(err)
	}
	if err := c.SetPayload(ByID(4), make([]byte, MaxPayload+1)); !errors.Is(err, ErrPayloadTooLarge) {
		t.Fatalf("oversized payload: %v", err)
	}
	if err := c.SetPayload(ByID(99), []byte("x")); !errors.Is(err, ErrNoMemory) {
		t.Fatalf("SetPayload of an unknown memory: %v", err)
	}
	want := map[uint64]struct{ attrs, payload string }{
		1: {`{"user":"u2","step":3}`, "old"},
		2: {"", "old"},
		3: {"", "a new, longer payload"},
		4: {"", "old"},
	}
	check := func(what string, c *Collection) {
		t.Helper()
		for id, w := range want {
			mi := mustGet(t, c, ByID(id))
			if string(mi.Attrs) != w.attrs || string(mi.Payload) != w.payload {
				t.Errorf("%s: memory %d has attrs %q payload %q, want %q %q", what, id, mi.Attrs, mi.Payload, w.attrs, w.payload)
			}
			if a, err := c.Attrs(ByID(id)); err != nil || string(a) != w.attrs {
				t.Errorf("%s: Attrs(%d) = %q, %v", what, id, a, err)
			}
		}
		if rep, err := c.Verify(); err != nil || rep.Err() != nil {
			t.Errorf("%s: Verify: %v %v", what, err, rep.Err())
		}
	}
	check("live", c)

	// From the log alone (crash, nothing checkpointed).
	fs, db = crashOpen(t, fs, 1)
	c, _ = db.Collection("c")
	check("replayed", c)
	// From a full checkpoint, then from it and a delta holding the
	// memories changed since; the log they replace is gone.
	if err := db.CheckpointFull(); err != nil {
		t.Fatal(err)
	}
	fs, db = crashOpen(t, fs, 2)
	c, _ = db.Collection("c")
	check("full checkpoint", c)
	if err := c.SetAttrs(ByID(4), []byte(`{"kind":"plan"}`)); err != nil {
		t.Fatal(err)
	}
	if err := c.SetPayload(ByID(2), []byte("p2")); err != nil {
		t.Fatal(err)
	}
	want[4] = struct{ attrs, payload string }{`{"kind":"plan"}`, "old"}
	want[2] = struct{ attrs, payload string }{"", "p2"}
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	d := readCkpt(t, fs, "/db/CHECKPOINT.1")
	if ids := memIDs(d.colls[0]); len(ids) != 2 || ids[0] != 2 || ids[1] != 4 {
		t.Fatalf("delta holds memories %v, want the two changed: [2 4]", ids)
	}
	fs, db = crashOpen(t, fs, 3)
	if db.Recovery.DeltasApplied != 1 || db.Recovery.RecordsReplayed != 0 {
		t.Fatalf("recovery %+v, want one delta and nothing replayed", db.Recovery)
	}
	c, _ = db.Collection("c")
	check("delta checkpoint", c)
	db.Close()
}

// TestRetrieveWithAttrs: retrieval results carry the key always and the
// attributes when asked.
func TestRetrieveWithAttrs(t *testing.T) {
	db, c := openAttrsDB(t, vfs.NewMemFS(), Options{})
	defer db.Close()
	if _, err := c.Add(AddRequest{Vector: []float32{1, 0, 0, 0}, Key: "a", Attrs: []byte(`{"x":1}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Add(AddRequest{Vector: []float32{0, 1, 0, 0}}); err != nil {
		t.Fatal(err)
	}
	opt := NewRetrieveOptions()
	res, err := c.Retrieve([]float32{1, 0, 0, 0}, opt)
	if err != nil || len(res) != 2 {
		t.Fatal(res, err)
	}
	if res[0].Key != "a" || res[0].Attrs != nil || res[1].Key != "" {
		t.Fatalf("without WithAttrs: %+v", res)
	}
	opt.WithAttrs = true
	res, _ = c.Retrieve([]float32{1, 0, 0, 0}, opt)
	if !bytes.Equal(res[0].Attrs, []byte(`{"x":1}`)) || res[1].Attrs != nil {
		t.Fatalf("with WithAttrs: %+v", res)
	}
}

// TestOpenVersion3Checkpoint: a database whose checkpoint was written by
// the previous version (3, no attributes, keys or expiry) opens, and its
// next checkpoint (a delta of the same chain) is version 4 and carries
// what changed since: chains may mix versions.
func TestOpenVersion3Checkpoint(t *testing.T) {
	fs := vfs.NewMemFS()
	db, c := openAttrsDB(t, fs, Options{})
	addN(t, c, 1, 4)
	if err := db.CheckpointFull(); err != nil {
		t.Fatal(err)
	}
	db.Close()
	cp := readCkpt(t, fs, "/db/CHECKPOINT")
	if err := vfs.WriteFileAtomic(fs, "/db/CHECKPOINT", encodeCheckpointVersion(cp, 3)); err != nil {
		t.Fatal(err)
	}
	db, c = openAttrsDB(t, fs, Options{})
	if in, _ := c.Info(); in.Count != 3 {
		t.Fatalf("count %d after opening a version-3 checkpoint", in.Count)
	}
	if err := c.SetAttrs(ByID(2), []byte(`{"v":4}`)); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil { // checkpoints: a delta over the version-3 full one
		t.Fatal(err)
	}
	data, err := vfs.ReadFile(fs, "/db/CHECKPOINT.1")
	if err != nil {
		t.Fatal(err)
	}
	if v := le.Uint32(data[len(ckptMagic):]); v != ckptVersion {
		t.Fatalf("checkpoint written as version %d", v)
	}
	db, c = openAttrsDB(t, fs, Options{})
	defer db.Close()
	if a, err := c.Attrs(ByID(2)); err != nil || string(a) != `{"v":4}` {
		t.Fatalf("attributes after reopen: %q %v", a, err)
	}
}

// TestSetPayloadFailureChangesNothing: a payload update whose file write
// fails (no descriptor) is an error that changes nothing: the old payload
// is served, the file's size is not advanced, the log is not poisoned,
// and updates that need no file (attributes) go on.
func TestSetPayloadFailureChangesNothing(t *testing.T) {
	mem := vfs.NewMemFS()
	fs := &emfileFS{FS: mem}
	opts := crashOpts(mem)
	opts.FS = fs
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	c := mustColl(t, db, "c", NewConfig(2))
	if _, err := c.Add(AddRequest{Vector: []float32{1, 0}, Payload: []byte("old"), Key: "k"}); err != nil {
		t.Fatal(err)
	}
	c.mu.RLock()
	size := c.pays.size
	c.mu.RUnlock()
	fs.fail.Store(true)
	db.files.forget(c.pays.path) // so that the next payload write must open the file
	if err := c.SetPayload(ByKey("k"), []byte("new")); !errors.Is(err, ErrTooManyOpenFiles) {
		t.Fatalf("SetPayload: %v, want ErrTooManyOpenFiles", err)
	}
	if err := c.SetAttrs(ByKey("k"), []byte(`{"a":1}`)); err != nil {
		t.Fatalf("SetAttrs needs no file: %v", err)
	}
	fs.fail.Store(false)
	c.mu.RLock()
	after := c.pays.size
	c.mu.RUnlock()
	if after != size || db.Err() != nil {
		t.Fatalf("payload file size %d, was %d; log error %v", after, size, db.Err())
	}
	if mi := mustGet(t, c, ByKey("k")); string(mi.Payload) != "old" || string(mi.Attrs) != `{"a":1}` {
		t.Fatalf("after the failed update: %+v", mi)
	}
	if err := c.SetPayload(ByKey("k"), []byte("new")); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db = openMem(t, mem)
	defer db.Close()
	c, _ = db.Collection("c")
	if mi := mustGet(t, c, ByKey("k")); string(mi.Payload) != "new" || string(mi.Attrs) != `{"a":1}` {
		t.Fatalf("after reopen: %+v", mi)
	}
}
