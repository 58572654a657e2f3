package engine

import (
	"encoding/binary"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memrl/memrl/ivfpq"
	"github.com/memrl/memrl/vfs"
	"github.com/memrl/memrl/wal"
)

// Damage to a saved index's inverted lists (issue 26, item 10): a list that
// fails its checksum must never fail a retrieval. A search that meets it
// scores that list's rows exactly, the damage is logged and shown, and a
// background build replaces the index.

// indexDamageCfg is the collection of these tests: lists enough that a
// query probes only some of them (DefaultNProbe is 24).
var indexDamageCfg = Config{Dim: 16, Metric: L2, Index: IndexConfig{NList: 48, TrainThreshold: 1000}}

// ixFile is the index file of collection uid 1, generation 0.
func ixFile(dir string) string {
	return filepath.Join(dir, "collections", "0000000000000001", "ivfpq", ivfpq.FileName)
}

// flipListByte flips one byte among the codes of the largest list of the
// index file at path (ivfpq/format.go: a list's segment is its ids, padded
// to 8 bytes, then its codes), leaving the header, centroids and directory
// intact, and returns that list's number.
func flipListByte(t *testing.T, path string) int {
	t.Helper()
	fi, err := ivfpq.Inspect(vfs.Default, path)
	if err != nil || len(fi.DamagedLists) > 0 {
		t.Fatalf("index file before the flip: %v, damaged lists %v", err, fi.DamagedLists)
	}
	l := 0
	for i, n := range fi.ListSizes {
		if n > fi.ListSizes[l] {
			l = i
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	entry := b[fi.DirOff+32*uint64(l):]
	off, n := binary.LittleEndian.Uint64(entry), uint64(binary.LittleEndian.Uint32(entry[8:]))
	at := fi.DataOff + off + (4*n+7)&^7 + 3
	b[at] ^= 0x10
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if fi, err = ivfpq.Inspect(vfs.Default, path); err != nil || len(fi.DamagedLists) != 1 || fi.DamagedLists[0].List != l {
		t.Fatalf("after flipping byte %d: %v, damaged lists %v (want list %d alone)", at, err, fi.DamagedLists, l)
	}
	return l
}

// buildDamageDB makes a database at dir holding n clustered vectors and a
// saved index of them, and returns the vectors by id.
func buildDamageDB(t *testing.T, dir string, n int) map[uint64][]float32 {
	t.Helper()
	db, err := Open(dir, Options{Sync: wal.SyncNone, CheckpointInterval: -1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Create("ix", indexDamageCfg); err != nil {
		t.Fatal(err)
	}
	c, _ := db.Collection("ix")
	vecs := map[uint64][]float32{}
	for _, v := range clustered(rand.New(rand.NewSource(26)), n, indexDamageCfg.Dim) {
		id, err := c.Add(AddRequest{Vector: v})
		if err != nil {
			t.Fatal(err)
		}
		vecs[id] = v
	}
	waitIndexed(t, c)
	return vecs
}

// damageQueries are the 60 queries: stored vectors, each its own nearest.
func damageQueries(vecs map[uint64][]float32) (ids []uint64, qs [][]float32) {
	for id := uint64(1); len(ids) < 60; id += 37 {
		ids = append(ids, id)
		qs = append(qs, vecs[id])
	}
	return ids, qs
}

func resultIDs(res []Result) []uint64 {
	out := make([]uint64, len(res))
	for i, r := range res {
		out[i] = r.ID
	}
	return out
}

// retrieveAll runs the queries through the collection and returns the
// answers' ids; a query that fails is counted in failed, its answer nil.
// When want is set, each answer must start with the query's own memory and
// hold as many of the exact search's answer as want[i] (what the undamaged
// index answered) does, or more; exact counts the answers equal to the
// exact search's.
func retrieveAll(t *testing.T, c *Collection, ids []uint64, qs [][]float32, want [][]uint64) (got [][]uint64, failed, exact int) {
	t.Helper()
	opt := NewRetrieveOptions()
	opt.K1, opt.K2, opt.Lambda = 10, 10, 0
	ex := opt
	ex.Path = PathExact
	for i, q := range qs {
		res, err := c.Retrieve(q, opt)
		if err != nil {
			t.Errorf("retrieval %d of %d: %v", i+1, len(qs), err)
			failed++
			got = append(got, nil)
			continue
		}
		got = append(got, resultIDs(res))
		if want == nil {
			continue
		}
		eres, err := c.Retrieve(q, ex)
		if err != nil {
			t.Fatal(err)
		}
		overlap := func(a, b []uint64) (n int) {
			for _, x := range a {
				if slices.Contains(b, x) {
					n++
				}
			}
			return n
		}
		switch e := resultIDs(eres); {
		case len(res) == 0 || res[0].ID != ids[i]:
			t.Errorf("retrieval %d: %v, want memory %d first", i+1, got[i], ids[i])
		case slices.Equal(got[i], e):
			exact++
		case overlap(got[i], e) < overlap(want[i], e):
			t.Errorf("retrieval %d: %v holds fewer of the exact %v than the undamaged index's %v", i+1, got[i], e, want[i])
		}
	}
	return got, failed, exact
}

// holdBuilds makes every index build started from now on wait, after
// sampling its first chunk, until the returned func is called (it is
// called at the end of the test too), so that a test can look at the
// collection before a rebuild replaces its index.
func holdBuilds(t *testing.T) (release func()) {
	hold := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(hold) }) }
	afterSampleChunk = func() { <-hold }
	t.Cleanup(func() {
		release()
		afterSampleChunk = nil
	})
	return release
}

// waitRebuilt waits for an index other than a damaged one to serve c.
func waitRebuilt(t *testing.T, c *Collection) Info {
	t.Helper()
	deadline := time.Now().Add(5 * time.Minute) // a bound, not a timing assertion
	for time.Now().Before(deadline) {
		info, err := c.Info()
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(info.Index, "ivfpq") && !strings.Contains(info.Index, "damaged") {
			return info
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("index not rebuilt within 5 minutes")
	return Info{}
}

// TestIndexListDamageAnswersEveryRetrieval: one flipped byte in a list of
// the saved index; after a restart every one of 60 retrievals answers, as
// the undamaged index or an exact search would, and the index is rebuilt.
func TestIndexListDamageAnswersEveryRetrieval(t *testing.T) {
	dir := t.TempDir()
	vecs := buildDamageDB(t, dir, 4000)
	ids, qs := damageQueries(vecs)

	db, err := Open(dir, Options{Sync: wal.SyncNone, CheckpointInterval: -1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := db.Collection("ix")
	want, failed, _ := retrieveAll(t, c, ids, qs, nil)
	if failed > 0 {
		t.Fatalf("%d of %d retrievals failed before any damage", failed, len(qs))
	}
	db.Close()
	bad := flipListByte(t, ixFile(dir))
	release := holdBuilds(t)

	logs := &logSink{}
	db, err = Open(dir, Options{Sync: wal.SyncNone, CheckpointInterval: -1, Logf: func(f string, a ...any) {
		logs.logf(f, a...)
		t.Logf(f, a...)
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, _ = db.Collection("ix")
	_, failed, exact := retrieveAll(t, c, ids, qs, want)
	t.Logf("list %d damaged: %d of %d retrievals failed, %d answered as the exact search", bad, failed, len(qs), exact)
	if failed > 0 {
		t.Fatalf("%d of %d retrievals failed", failed, len(qs))
	}
	if len(logs.grep("damaged")) == 0 {
		t.Errorf("the damage was not logged")
	}
	if info, _ := c.Info(); info.IndexDamage != 1 || !strings.HasSuffix(info.Index, "(damaged: rebuilding)") {
		t.Errorf("Info: index %q, IndexDamage %d; want a damaged index being rebuilt, 1", info.Index, info.IndexDamage)
	}

	release()
	info := waitRebuilt(t, c)
	t.Logf("rebuilt: %s", info.Index)
	if _, failed, _ = retrieveAll(t, c, ids, qs, nil); failed > 0 {
		t.Fatalf("%d of %d retrievals failed after the rebuild", failed, len(qs))
	}
	if r := recallAt1(t, c, vecs, nil); r < 0.95 {
		t.Fatalf("recall@1 through the rebuilt index %.3f", r)
	}
	rep, err := c.Verify()
	if err != nil || rep.Index != "ok" {
		t.Fatalf("verify after the rebuild: index %q, %v", rep.Index, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// The rebuilt index replaced the damaged file.
	if fi, err := ivfpq.Inspect(vfs.Default, ixFile(dir)); err != nil || len(fi.DamagedLists) > 0 || fi.Rows != 4000 {
		t.Fatalf("index file after the rebuild: %v, %d rows, damaged lists %v", err, fi.Rows, fi.DamagedLists)
	}
}

// openDamaged builds a database at dir with a saved index, flips a byte in
// one of its lists and opens it again without checking the lists at open
// (checkIndexAtOpen off), so that a search or a verify meets the damage.
func openDamaged(t *testing.T, dir string) (*DB, *Collection, *logSink, map[uint64][]float32) {
	t.Helper()
	vecs := buildDamageDB(t, dir, 4000)
	flipListByte(t, ixFile(dir))
	checkIndexAtOpen = false
	t.Cleanup(func() { checkIndexAtOpen = true })
	logs := &logSink{}
	db, err := Open(dir, Options{Sync: wal.SyncNone, CheckpointInterval: -1, Logf: func(f string, a ...any) {
		logs.logf(f, a...)
		t.Logf(f, a...)
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	c, _ := db.Collection("ix")
	if info, _ := c.Info(); len(logs.grep("damaged")) > 0 || info.IndexDamage != 0 || !strings.HasPrefix(info.Index, "ivfpq") {
		t.Fatalf("damage found at open with checkIndexAtOpen off: index %q, %v", info.Index, logs.grep("damaged"))
	}
	return db, c, logs, vecs
}

// TestIndexListDamageMetBySearch: damage not found at open is met by the
// searches that probe the list, an add's dedup search (under the write
// lock) first: each answers exactly, and the index is rebuilt.
func TestIndexListDamageMetBySearch(t *testing.T) {
	dir := t.TempDir()
	db, c, logs, vecs := openDamaged(t, dir)
	ids, qs := damageQueries(vecs)
	for i, q := range qs {
		id, err := c.Add(AddRequest{Vector: q, HasDedup: true, Dedup: 0})
		if err != nil || id != ids[i] {
			t.Fatalf("dedup add %d: id %d, %v; want memory %d", i+1, id, err, ids[i])
		}
	}
	if info, _ := c.Info(); info.IndexDamage != 1 || len(logs.grep("damaged")) == 0 {
		t.Fatalf("after the dedup adds: Info.IndexDamage %d, damage logged %v", info.IndexDamage, logs.grep("damaged"))
	}
	if _, failed, _ := retrieveAll(t, c, ids, qs, nil); failed > 0 {
		t.Fatalf("%d of %d retrievals failed", failed, len(qs))
	}
	waitRebuilt(t, c)
	if r := recallAt1(t, c, vecs, nil); r < 0.95 {
		t.Fatalf("recall@1 through the rebuilt index %.3f", r)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := ivfpq.Inspect(vfs.Default, ixFile(dir)); err != nil || len(fi.DamagedLists) > 0 || fi.Rows != 4000 {
		t.Fatalf("index file after the rebuild: %v, %d rows, damaged lists %v", err, fi.Rows, fi.DamagedLists)
	}
}

// TestIndexListDamageFoundByVerify: Verify (MEM.VERIFY) reports a damaged
// list and has the index rebuilt, after which it verifies clean.
func TestIndexListDamageFoundByVerify(t *testing.T) {
	_, c, _, _ := openDamaged(t, t.TempDir())
	rep, err := c.Verify()
	if err != nil || rep.Damaged != 1 || !strings.Contains(rep.Index, "list") {
		t.Fatalf("verify: index %q, %d damaged, %v", rep.Index, rep.Damaged, err)
	}
	if info, _ := c.Info(); info.IndexDamage != 1 {
		t.Fatalf("Info.IndexDamage %d, want 1", info.IndexDamage)
	}
	waitRebuilt(t, c)
	if rep, err := c.Verify(); err != nil || rep.Damaged != 0 || rep.Index != "ok" {
		t.Fatalf("verify after the rebuild: index %q, %d damaged, %v", rep.Index, rep.Damaged, err)
	}
}

// TestIndexCentroidDamageAnswersEveryRetrieval: damage to the centroids,
// which Open checks, discards the whole index: every retrieval answers by
// an exact scan until the rebuild.
func TestIndexCentroidDamageAnswersEveryRetrieval(t *testing.T) {
	dir := t.TempDir()
	vecs := buildDamageDB(t, dir, 4000)
	ids, qs := damageQueries(vecs)
	fi, err := ivfpq.Inspect(vfs.Default, ixFile(dir))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(ixFile(dir))
	b[fi.MetaOff+5] ^= 0x10
	os.WriteFile(ixFile(dir), b, 0o644)
	release := holdBuilds(t)

	logs := &logSink{}
	db, err := Open(dir, Options{Sync: wal.SyncNone, CheckpointInterval: -1, Logf: logs.logf})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, _ := db.Collection("ix")
	if len(logs.grep("centroid section checksum")) == 0 {
		t.Errorf("the damage was not logged: %q", logs.lines)
	}
	if info, _ := c.Info(); info.IndexDamage != 1 || info.Index != "flat (building ivfpq)" {
		t.Errorf("Info: index %q, IndexDamage %d; want an exact scan while an index is built, 1", info.Index, info.IndexDamage)
	}
	// Every answer is the exact one (want holds no other).
	if _, failed, exact := retrieveAll(t, c, ids, qs, make([][]uint64, len(qs))); failed > 0 || exact != len(qs) {
		t.Fatalf("%d of %d retrievals failed, %d answered as the exact search", failed, len(qs), exact)
	}
	release()
	waitRebuilt(t, c)
	if r := recallAt1(t, c, vecs, nil); r < 0.95 {
		t.Fatalf("recall@1 through the rebuilt index %.3f", r)
	}
}
