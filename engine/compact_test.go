package engine

import (
	"errors"
	"fmt"
	"math/rand"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/memrl/memrl/engine/filter"
	"github.com/memrl/memrl/vfs"
	"github.com/memrl/memrl/wal"
)

// compactFixture is a collection with memories added, rewarded, some
// payloads replaced and some deleted, and the model of what must remain.
type compactFixture struct {
	fs      *vfs.MemFS // the database's file system (reopen replaces it after a crash)
	db      *DB
	c       *Collection
	live    map[uint64]mMem
	deleted map[uint64]bool
}

func newCompactFixture(t *testing.T, fs *vfs.MemFS, cfg Config, n int, seed int64) *compactFixture {
	t.Helper()
	db, err := Open("/db", Options{FS: fs, Sync: wal.SyncAlways, CheckpointInterval: -1, CheckpointBytes: -1,
		CompactShare: -1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	c := mustColl(t, db, "c", cfg)
	f := &compactFixture{fs: fs, db: db, c: c, live: map[uint64]mMem{}, deleted: map[uint64]bool{}}
	rng := rand.New(rand.NewSource(seed))
	for i, v := range clustered(rng, n, cfg.Dim) {
		id := uint64(i + 1)
		f.addOne(t, id, v, rng)
	}
	// Replace some payloads (their old records become garbage) and
	// reward some memories.
	for id := uint64(1); id <= uint64(n); id += 5 {
		p := []byte(fmt.Sprintf("replaced %d", id))
		if err := c.SetPayload(ByID(id), p); err != nil {
			t.Fatal(err)
		}
		m := f.live[id]
		m.payload = p
		f.live[id] = m
	}
	f.reward(t, 2, []uint64{1, 2, 3})
	// Delete about half.
	var del []uint64
	for id := uint64(1); id <= uint64(n); id++ {
		if rng.Intn(2) == 0 {
			del = append(del, id)
		}
	}
	f.delete(t, del)
	return f
}

func (f *compactFixture) addOne(t *testing.T, id uint64, v []float32, rng *rand.Rand) {
	t.Helper()
	p := []byte(fmt.Sprintf("payload %d %d", id, rng.Intn(1000)))
	attrs := fmt.Sprintf(`{"g":%d}`, id%4)
	if _, err := f.c.Add(AddRequest{Vector: v, Payload: p, ID: id, HasID: true, Q: 1, HasQ: true, Attrs: []byte(attrs)}); err != nil {
		t.Fatal(err)
	}
	f.live[id] = mMem{vec: v, payload: p, q: 1, attrs: attrs}
	delete(f.deleted, id)
}

func (f *compactFixture) reward(t *testing.T, r float64, ids []uint64) {
	t.Helper()
	qs, err := f.c.Reward(r, ids, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		m := f.live[id]
		m.q, m.visits = qs[i], m.visits+1
		f.live[id] = m
	}
}

func (f *compactFixture) delete(t *testing.T, ids []uint64) {
	t.Helper()
	if _, err := f.c.Delete(ids); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		delete(f.live, id)
		f.deleted[id] = true
	}
}

// check compares c with the model: every live memory whole (Get), no
// deleted one by Get, Scan or Retrieve of its own vector, Scan exactly the
// live ids, and Count.
func (f *compactFixture) check(t *testing.T, c *Collection) {
	t.Helper()
	for id, want := range f.live {
		got, err := c.Get(id)
		if err != nil || !checkMem(got, true, want, true) {
			t.Fatalf("memory %d: %+v, %v; want %+v", id, got, err, want)
		}
	}
	for id := range f.deleted {
		if _, err := c.Get(id); !errors.Is(err, ErrNoMemory) {
			t.Fatalf("deleted memory %d: Get err %v", id, err)
		}
	}
	var scanned []uint64
	for cur := uint64(0); ; {
		page, next, err := c.Scan(cur, ScanOptions{Count: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range page {
			scanned = append(scanned, m.ID)
		}
		if next == 0 {
			break
		}
		cur = next
	}
	want := make([]uint64, 0, len(f.live))
	for id := range f.live {
		want = append(want, id)
	}
	slices.Sort(want)
	if !slices.Equal(scanned, want) {
		t.Fatalf("scan: %d ids, want %d", len(scanned), len(want))
	}
	in, err := c.Info()
	if err != nil {
		t.Fatal(err)
	}
	if in.Count != len(f.live) {
		t.Fatalf("count %d, want %d", in.Count, len(f.live))
	}
	for id, m := range f.live {
		opt := NewRetrieveOptions()
		opt.K1, opt.K2, opt.Lambda = 20, 20, 0
		res, err := c.Retrieve(m.vec, opt)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if f.deleted[r.ID] {
				t.Fatalf("deleted memory %d retrieved", r.ID)
			}
		}
		if id%7 != 0 {
			continue // the rest are checked for deleted ids only
		}
		// With the filter on the attribute index too.
		opt.Filter = mustParseFilter(t, fmt.Sprintf(`.g == %d`, id%4))
		res, err = c.Retrieve(m.vec, opt)
		if err != nil {
			t.Fatal(err)
		}
		if len(res) == 0 || res[0].ID != id {
			t.Fatalf("memory %d not found first by its own vector under a filter: %+v", id, res)
		}
	}
}

var flatCfg = Config{Dim: 8, Metric: L2, Alpha: 0.5, Indexed: []string{"g"}}

// TestCompactReclaimsAndKeepsEverythingLive compacts a flat collection
// whose half is deleted: the live memories are unchanged (vector, payload,
// Q, visits, attributes), deleted ones never come back, the rows and
// bytes shrink, the old generation's files are gone, and all of it holds
// after a restart, and after more writes and a second compaction.
func TestCompactReclaimsAndKeepsEverythingLive(t *testing.T) {
	fs := vfs.NewMemFS()
	f := newCompactFixture(t, fs, flatCfg, 400, 1)
	before, _ := f.c.Info()
	st, err := f.c.Compact()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", st)
	if st.RowsBefore != before.Rows || st.RowsAfter != uint32(len(f.live)) {
		t.Fatalf("rows %d -> %d, want %d -> %d", st.RowsBefore, st.RowsAfter, before.Rows, len(f.live))
	}
	if st.BytesAfter >= st.BytesBefore/2+st.BytesBefore/4 {
		t.Fatalf("bytes %d -> %d: not reclaimed", st.BytesBefore, st.BytesAfter)
	}
	if f.c.DeletedRows() != 0 {
		t.Fatalf("%d dead rows after compaction", f.c.DeletedRows())
	}
	f.check(t, f.c)
	names, err := f.fs.List(f.c.dir)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	if want := []string{"payloads.1.dat", "vectors.1.f32", "vectors.1.sum"}; !slices.Equal(names, want) {
		t.Fatalf("files after compaction: %v, want %v", names, want)
	}

	// Writes after the swap go to the new files, and survive a restart
	// (replayed from the log over the compacted checkpoint).
	rng := rand.New(rand.NewSource(9))
	for i, v := range clustered(rng, 50, flatCfg.Dim) {
		f.addOne(t, uint64(1000+i), v, rng)
	}
	f.delete(t, []uint64{1000, 1001})
	f.reward(t, -1, []uint64{1002})
	if err := f.c.SetPayload(ByID(1003), []byte("after")); err != nil {
		t.Fatal(err)
	}
	m := f.live[1003]
	m.payload = []byte("after")
	f.live[1003] = m
	db2 := f.reopen(t, true)
	c2, _ := db2.Collection("c")
	f.check(t, c2)

	// A second compaction, then a restart from its checkpoint alone.
	f.c = c2
	f.delete(t, []uint64{1004, 1005, 1006})
	if _, err := c2.Compact(); err != nil {
		t.Fatal(err)
	}
	f.check(t, c2)
	db3 := f.reopen(t, false)
	c3, _ := db3.Collection("c")
	f.check(t, c3)
	names, _ = f.fs.List(c3.dir)
	sort.Strings(names)
	if want := []string{"payloads.2.dat", "vectors.2.f32", "vectors.2.sum"}; !slices.Equal(names, want) {
		t.Fatalf("files after the second compaction: %v, want %v", names, want)
	}
}

// reopen closes f.db (or, with crash, drops it as kill -9 would: the
// MemFS loses nothing synced) and opens the database again.
func (f *compactFixture) reopen(t *testing.T, crash bool) *DB {
	t.Helper()
	if crash {
		f.db.Close()
		f.fs = f.fs.Crash(vfs.DropUnsynced, rand.New(rand.NewSource(1)))
	} else if err := f.db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := Open("/db", Options{FS: f.fs, Sync: wal.SyncAlways, CheckpointInterval: -1, CheckpointBytes: -1,
		CompactShare: -1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	f.db = db
	return db
}

// TestCompactIndexedCollectionKeepsRecall compacts an IVF-PQ collection
// with memories deleted and pruned: the index is remapped (not
// retrained), answers with the recall it had (against the exact scan) and
// never returns a deleted or pruned memory, also after a restart and
// after a retrain.
func TestCompactIndexedCollectionKeepsRecall(t *testing.T) {
	fs := vfs.NewMemFS()
	cfg := Config{Dim: 16, Metric: L2, Alpha: 0.5, Indexed: []string{"g"},
		Index: IndexConfig{Kind: IndexIVFPQ, NList: 16, TrainThreshold: 1000}}
	f := newCompactFixture(t, fs, cfg, 3000, 2)
	waitBuilt(t, f.c)
	recall := func(c *Collection) float64 {
		hit, n := 0, 0
		rng := rand.New(rand.NewSource(5))
		for _, q := range clustered(rng, 100, cfg.Dim) {
			opt := NewRetrieveOptions()
			opt.K1, opt.K2, opt.Lambda = 10, 10, 0
			opt.Path = PathExact
			exact, err := c.Retrieve(q, opt)
			if err != nil {
				t.Fatal(err)
			}
			opt.Path = PathIndex
			got, err := c.Retrieve(q, opt)
			if err != nil {
				t.Fatal(err)
			}
			set := map[uint64]bool{}
			for _, r := range got {
				set[r.ID] = true
				if f.deleted[r.ID] {
					t.Fatalf("deleted memory %d retrieved", r.ID)
				}
			}
			for _, r := range exact {
				n++
				if set[r.ID] {
					hit++
				}
			}
		}
		return float64(hit) / float64(n)
	}
	// Prune every memory of group 3 too: pruned memories are deletes.
	var pruned []uint64
	for id := range f.live {
		if id%4 == 3 {
			pruned = append(pruned, id)
		}
	}
	n, tk, err := f.c.Prune(PruneOptions{HasMaxCount: true, MaxCount: 0, Filter: mustParseFilter(t, `.g == 3`)})
	if err != nil || n != len(pruned) {
		t.Fatalf("prune: %d, %v; want %d", n, err, len(pruned))
	}
	if err := f.db.WaitDurable(tk); err != nil {
		t.Fatal(err)
	}
	for _, id := range pruned {
		delete(f.live, id)
		f.deleted[id] = true
	}
	r0 := recall(f.c)
	trained := f.c.trainedOn
	if _, err := f.c.Compact(); err != nil {
		t.Fatal(err)
	}
	f.c.mu.RLock()
	ix := f.c.ivf
	f.c.mu.RUnlock()
	if ix == nil || ix.Rows() != uint32(len(f.live)) || f.c.trainedOn != trained {
		t.Fatalf("index after compaction: %v (trained on %d, was %d)", ix, f.c.trainedOn, trained)
	}
	r1 := recall(f.c)
	t.Logf("recall@10 against exact: %.3f before, %.3f after compaction", r0, r1)
	if r1 < r0-0.02 {
		t.Fatalf("recall fell from %.3f to %.3f", r0, r1)
	}
	f.check(t, f.c)
	f.c.bg.Wait() // the new index's save
	db2 := f.reopen(t, false)
	c2, _ := db2.Collection("c")
	f.c = c2
	waitBuilt(t, c2)
	f.check(t, c2)
	if r2 := recall(c2); r2 < r0-0.02 {
		t.Fatalf("recall after restart %.3f, was %.3f", r2, r0)
	}
	// Grow past the retrain size: the new index is trained on the
	// compacted rows and still never returns a deleted memory.
	rng := rand.New(rand.NewSource(11))
	for i, v := range clustered(rng, 4*len(f.live), cfg.Dim) {
		f.addOne(t, uint64(10000+i), v, rng)
	}
	waitBuilt(t, c2)
	f.check(t, c2)
}

// TestCompactSectionCorruptionIsRefused damages the compaction section of
// a checkpoint (its version, its length): Open refuses the checkpoint as
// corrupt rather than opening the wrong generation's files.
func TestCompactSectionCorruptionIsRefused(t *testing.T) {
	for name, data := range map[string][]byte{
		"version": append([]byte{9}, make([]byte, 8)...),
		"short":   {compactSectVersion, 1, 0, 0},
	} {
		cc := ckptCollection{name: "c", sections: []ckptSection{{Tag: sectCompact, Data: data}}}
		if _, err := collGen(cc); !errors.Is(err, ErrCorruptCheckpoint) {
			t.Fatalf("%s: %v, want ErrCorruptCheckpoint", name, err)
		}
	}
	if g, err := collGen(ckptCollection{sections: []ckptSection{{Tag: sectCompact, Data: encodeCompactSection(7)}}}); g != 7 || err != nil {
		t.Fatalf("round trip: %d, %v", g, err)
	}

	// Through a real checkpoint file: rewrite the section's version byte
	// and fix the file's checksum, as damage the checksum missed would.
	fs := vfs.NewMemFS()
	f := newCompactFixture(t, fs, flatCfg, 100, 3)
	if _, err := f.c.Compact(); err != nil {
		t.Fatal(err)
	}
	if err := f.db.Close(); err != nil {
		t.Fatal(err)
	}
	// Close wrote a delta, which carries the sections whole: damage the
	// section in every file of the chain.
	var data []byte
	for seq := uint32(0); ; seq++ {
		path := filepath.Join("/db", ckptFileName(seq))
		raw, err := vfs.ReadFile(fs, path)
		if err != nil {
			if seq == 0 {
				t.Fatal(err)
			}
			break
		}
		if seq == 0 {
			data = raw
		}
		cp, err := decodeCheckpoint(raw)
		if err != nil {
			t.Fatal(err)
		}
		if g, _ := collGen(cp.colls[0]); g != 1 {
			t.Fatalf("%s records generation %d, want 1", path, g)
		}
		cp.colls[0].sections[0].Data[0] = 9
		if err := vfs.WriteFileAtomic(fs, path, encodeCheckpoint(cp)); err != nil {
			t.Fatal(err)
		}
	}
	if db, err := Open("/db", Options{FS: fs, CheckpointInterval: -1, Logf: t.Logf}); !errors.Is(err, ErrCorruptCheckpoint) {
		if db != nil {
			db.Close()
		}
		t.Fatalf("Open over a damaged compaction section: %v, want ErrCorruptCheckpoint", err)
	}
	path := filepath.Join("/db", ckptName)
	// A flipped byte anywhere in the file is caught by its checksum.
	data[len(data)/2] ^= 0x40
	if err := vfs.WriteFileAtomic(fs, path, data); err != nil {
		t.Fatal(err)
	}
	if db, err := Open("/db", Options{FS: fs, CheckpointInterval: -1, Logf: t.Logf}); err == nil {
		db.Close()
		t.Fatal("Open over a damaged checkpoint succeeded")
	}
}

// TestCompactRefusesASecond checks ErrCompacting.
func TestCompactRefusesASecond(t *testing.T) {
	f := newCompactFixture(t, vfs.NewMemFS(), flatCfg, 50, 4)
	if err := f.c.startCompact(); err != nil {
		t.Fatal(err)
	}
	if err := f.c.CompactAsync(); !errors.Is(err, ErrCompacting) {
		t.Fatalf("second compaction: %v, want ErrCompacting", err)
	}
	if _, err := f.c.runCompact(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.c.Compact(); err != nil {
		t.Fatalf("after the first ended: %v", err)
	}
	f.check(t, f.c)
}

// TestCompactTrigger checks that the background trigger compacts once the
// reclaimable share is reached, and not before.
func TestCompactTrigger(t *testing.T) {
	old := compactCheckInterval
	compactCheckInterval = 10 * time.Millisecond
	defer func() { compactCheckInterval = old }()
	fs := vfs.NewMemFS()
	db, err := Open("/db", Options{FS: fs, CheckpointInterval: -1, CompactShare: 0.4, CompactMinRows: 10, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c := mustColl(t, db, "c", flatCfg)
	for i := 1; i <= 100; i++ {
		add(t, c, uint64(i), 0, 1, 2, 3, 4, 5, 6, 7, float32(i))
	}
	var del []uint64
	for i := 1; i <= 30; i++ {
		del = append(del, uint64(i))
	}
	if _, err := c.Delete(del); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if _, ok := c.LastCompaction(); ok {
		t.Fatal("compacted at 30% dead with a 40% share")
	}
	if _, err := c.Delete([]uint64{31, 32, 33, 34, 35, 36, 37, 38, 39, 40}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if st, ok := c.LastCompaction(); ok {
			if st.RowsAfter != 60 {
				t.Fatalf("%+v", st)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no compaction at 40% dead")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func mustParseFilter(t *testing.T, src string) *filter.Expr {
	t.Helper()
	e, err := filter.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	return e
}
