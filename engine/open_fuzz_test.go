package engine

import (
	"cmp"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memrl/memrl/fuzz/corpus"
	"github.com/memrl/memrl/vfs"
)

// fuzzTemplate is a small database's files (vector and payload files, the
// log) and its checkpoint chain, built once per process by buildTemplate.
type fuzzTemplate struct {
	files map[string][]byte // everything but CHECKPOINT*, by path
	full  []byte            // CHECKPOINT
	delta []byte            // CHECKPOINT.1
}

var (
	templateOnce sync.Once
	template     fuzzTemplate
)

// buildTemplate makes a database with an L2 and a COSINE collection,
// memories with payloads, a deleted memory, a full checkpoint, a delta,
// and log records after it.
func buildTemplate(t testing.TB) fuzzTemplate {
	templateOnce.Do(func() {
		fs := vfs.NewMemFS()
		db, err := Open("/db", Options{FS: fs, CheckpointInterval: -1, Logf: func(string, ...any) {}})
		if err != nil {
			panic(err)
		}
		cfgL2 := NewConfig(4)
		cfgL2.Metric = L2
		for _, name := range []string{"a", "b"} {
			cfg := NewConfig(4)
			if name == "a" {
				cfg = cfgL2
			}
			if err := db.Create(name, cfg); err != nil {
				panic(err)
			}
		}
		a, _ := db.Collection("a")
		b, _ := db.Collection("b")
		for i := 1; i <= 6; i++ {
			for _, c := range []*Collection{a, b} {
				if _, err := c.Add(AddRequest{Vector: []float32{float32(i), 1, -2, 0.5}, ID: uint64(i), HasID: true,
					Payload: []byte(strings.Repeat("p", i))}); err != nil {
					panic(err)
				}
			}
		}
		if _, err := a.Delete([]uint64{2}); err != nil {
			panic(err)
		}
		if err := a.SetAttrs(ByID(6), []byte(`{"user":"u7","step":3}`)); err != nil {
			panic(err)
		}
		if err := db.CheckpointFull(); err != nil {
			panic(err)
		}
		if _, err := b.Delete([]uint64{3}); err != nil {
			panic(err)
		}
		if _, err := a.Add(AddRequest{Vector: []float32{0, 0, 1, 1}, ID: 9, HasID: true, Payload: []byte("nine")}); err != nil {
			panic(err)
		}
		if err := db.Checkpoint(); err != nil {
			panic(err)
		}
		if _, err := b.Reward(1, []uint64{1, 4}, nil); err != nil {
			panic(err)
		}
		if _, err := a.Add(AddRequest{Vector: []float32{1, 1, 1, 1}, ID: 10, HasID: true,
			Key: "ten", Attrs: []byte(`{"kind":"plan"}`), TTL: 1000 * time.Hour}); err != nil {
			panic(err)
		}
		// The log suffix holds every record type of the data model.
		if err := b.SetPayload(ByID(1), []byte("replaced")); err != nil {
			panic(err)
		}
		if err := a.SetAttrs(ByID(9), []byte(`{"kind":"fact"}`)); err != nil {
			panic(err)
		}
		if t, err := a.ExpireDeferred(ByKey("ten"), 2000*time.Hour); err != nil {
			panic(err)
		} else if err := db.WaitDurable(t); err != nil {
			panic(err)
		}
		// Abandon the database without Close, as a crash would: Close
		// takes a final checkpoint that would make the log suffix empty.
		tpl := fuzzTemplate{files: map[string][]byte{}}
		var walk func(dir string)
		walk = func(dir string) {
			names, err := fs.List(dir)
			if err != nil {
				panic(err)
			}
			for _, n := range names {
				p := filepath.Join(dir, n)
				st, err := fs.Stat(p)
				if err != nil {
					panic(err)
				}
				if st.IsDir() {
					walk(p)
					continue
				}
				data, err := vfs.ReadFile(fs, p)
				if err != nil {
					panic(err)
				}
				switch n {
				case ckptName:
					tpl.full = data
				case ckptFileName(1):
					tpl.delta = data
				case "LOCK":
				default:
					tpl.files[p] = data
				}
			}
		}
		walk("/db")
		if tpl.full == nil || tpl.delta == nil {
			panic("template: no checkpoint chain")
		}
		tpl.full, tpl.delta = normalise(tpl.full), normalise(tpl.delta)
		template = tpl
	})
	return template
}

// normalise re-encodes a checkpoint file without what differs between
// runs (chain id, clock readings, map order), so that the committed seeds
// are reproducible.
func normalise(b []byte) []byte {
	cp, err := decodeCheckpoint(b)
	if err != nil {
		panic(err)
	}
	cp.chainID = 0x5eed
	slices.SortFunc(cp.colls, func(x, y ckptCollection) int { return cmp.Compare(x.uid, y.uid) })
	for i := range cp.colls {
		c := &cp.colls[i]
		slices.SortFunc(c.mems, func(x, y ckptMemory) int { return cmp.Compare(x.id, y.id) })
		slices.Sort(c.tombs)
		for j := range c.mems {
			c.mems[j].m.created = 1e18 + int64(c.mems[j].id)
			if c.mems[j].updated != 0 {
				c.mems[j].updated = 2e18
			}
		}
	}
	return encodeCheckpoint(cp)
}

func openCheckpointSeeds(t testing.TB) map[string]corpus.Seed {
	tpl := buildTemplate(t)
	full, err := decodeCheckpoint(tpl.full)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]corpus.Seed{
		"chain":     {tpl.full, tpl.delta, false},
		"full-only": {tpl.full, []byte{}, false},
		"fixed":     {tpl.full, tpl.delta, true},
		"v1":        {encodeCheckpointOld(full, 1), []byte{}, true},
		"v2":        {encodeCheckpointOld(full, 2), []byte{}, true},
		"no-ckpt":   {[]byte{}, []byte{}, false},
	}
}

// openFuzzDB opens the template database with full and delta as its
// checkpoint files (absent when empty; checksums fixed when fix is set).
func openFuzzDB(t testing.TB, full, delta []byte, fix bool) (*DB, error) {
	tpl := buildTemplate(t)
	fs := vfs.NewMemFS()
	for p, data := range tpl.files {
		if err := fs.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := vfs.WriteFileAtomic(fs, p, data); err != nil {
			t.Fatal(err)
		}
	}
	for seq, data := range [][]byte{full, delta} {
		if len(data) == 0 {
			continue
		}
		if fix && len(data) >= 8 {
			data = resum(data)
		}
		if err := vfs.WriteFileAtomic(fs, filepath.Join("/db", ckptFileName(uint32(seq))), data); err != nil {
			t.Fatal(err)
		}
	}
	return Open("/db", Options{FS: fs, CheckpointInterval: -1, Logf: func(string, ...any) {}})
}

func TestFuzzSeedsOpenCheckpoint(t *testing.T) {
	seeds := openCheckpointSeeds(t)
	// The real chain opens to the template's state: deltas and the log
	// suffix applied.
	s := seeds["chain"]
	db, err := openFuzzDB(t, s[0].([]byte), s[1].([]byte), s[2].(bool))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int{"a": 7, "b": 5} {
		c, err := db.Collection(name)
		if err != nil {
			t.Fatal(err)
		}
		if info, err := c.Info(); err != nil || info.Count != want {
			t.Errorf("collection %s: %+v, %v; want %d memories", name, info, err, want)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	corpus.Check(t, "FuzzOpenCheckpoint", seeds)
}

// FuzzOpenCheckpoint opens a database whose vector, payload and log files
// are real (buildTemplate's) but whose CHECKPOINT and CHECKPOINT.1 hold
// arbitrary bytes (absent when empty; with fix set, their checksums are
// first made right, so that the checks behind them are reached). This
// drives decoding, the merge of a delta and loading into collections.
// Invariants: Open never panics; it fails, or it opens a database on
// which listing, Info and a retrieval succeed, Get of every memory
// succeeds or reports ErrCorrupt (bytes that fail their checksum), and
// Close (which checkpoints) succeeds.
func FuzzOpenCheckpoint(f *testing.F) {
	f.Fuzz(func(t *testing.T, full, delta []byte, fix bool) {
		db, err := openFuzzDB(t, full, delta, fix)
		if err != nil {
			return
		}
		for _, name := range db.List() {
			c, err := db.Collection(name)
			if err != nil {
				t.Fatalf("listed collection %q: %v", name, err)
			}
			info, err := c.Info()
			if err != nil {
				t.Fatalf("info %q: %v", name, err)
			}
			for id := uint64(0); id < min(info.NextID+2, 64); id++ {
				// A checkpoint that points a memory at the wrong bytes of
				// its files is caught by their checksums when read
				// (ErrCorrupt), as on-disk damage is.
				if _, err := c.Get(id); err != nil && !errors.Is(err, ErrNoMemory) && !errors.Is(err, ErrCorrupt) {
					t.Fatalf("get %q %d: %v", name, id, err)
				}
			}
			q := make([]float32, info.Dim)
			q[0] = 1
			if _, err := c.Retrieve(q, NewRetrieveOptions()); err != nil {
				t.Fatalf("retrieve %q: %v", name, err)
			}
		}
		if err := db.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
	})
}
