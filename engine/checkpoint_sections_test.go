package engine

import (
	"errors"
	"math/rand"
	"reflect"
	"sync"
	"testing"

	"github.com/memrl/memrl/wal"
)

// withSections returns a copy of cp whose collections carry a test
// section and whose every other memory carries a memory test section.
func withSections(cp checkpoint) checkpoint {
	out := cp
	out.colls = append([]ckptCollection(nil), cp.colls...)
	for i := range out.colls {
		out.colls[i].sections = []ckptSection{{Tag: sectTest, Data: []byte{byte(i), 1, 2, 3}}}
		mems := append([]ckptMemory(nil), out.colls[i].mems...)
		for j := range mems {
			if j%2 == 0 {
				mems[j].sections = []ckptSection{{Tag: memSectTest, Data: []byte{byte(j), 9}}}
			}
		}
		out.colls[i].mems = mems
	}
	return out
}

func setTestSections(t *testing.T) {
	testSections = true
	t.Cleanup(func() {
		testSections = false
		testCollSections, testMemSections, testLoadSections = nil, nil, nil
	})
}

func TestCheckpointSectionsRoundTrip(t *testing.T) {
	setTestSections(t)
	rng := rand.New(rand.NewSource(3))
	for _, sizes := range [][]int{{0}, {1}, {3, 0, 7}} {
		cp := withSections(withExt(randomCheckpoint(rng, sizes...)))
		delta := cp
		delta.kind, delta.chainID, delta.seq = ckptDelta, 5, 2
		for _, x := range []checkpoint{cp, delta} {
			if got, err := decodeCheckpoint(encodeCheckpoint(x)); err != nil || !reflect.DeepEqual(got, x) {
				t.Fatalf("sizes %v: sections not kept: %v", sizes, err)
			}
		}
		// Version 5 has no sections: they are dropped, the rest is kept.
		want := withExt(randomCheckpointLike(cp))
		if got, err := decodeCheckpoint(encodeCheckpointVersion(cp, 5)); err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("sizes %v: version 5: %v", sizes, err)
		}
	}
}

// randomCheckpointLike returns cp without its sections.
func randomCheckpointLike(cp checkpoint) checkpoint {
	out := cp
	out.colls = append([]ckptCollection(nil), cp.colls...)
	for i := range out.colls {
		out.colls[i].sections = nil
		mems := append([]ckptMemory(nil), out.colls[i].mems...)
		for j := range mems {
			mems[j].sections = nil
		}
		out.colls[i].mems = mems
	}
	return out
}

// TestCheckpointRefusesUnknownSection: a section this build does not know
// is state it would drop at its next checkpoint, so the file is refused;
// so is a tag given twice.
func TestCheckpointRefusesUnknownSection(t *testing.T) {
	setTestSections(t)
	rng := rand.New(rand.NewSource(4))
	cp := withSections(randomCheckpoint(rng, 3))
	b := encodeCheckpoint(cp)
	testSections = false // a build without the test tags
	if _, err := decodeCheckpoint(b); !errors.Is(err, ErrCorruptCheckpoint) {
		t.Fatalf("unknown collection and memory sections: got %v, want ErrCorruptCheckpoint", err)
	}
	memOnly := randomCheckpointLike(cp)
	memOnly.colls[0].mems[0].sections = cp.colls[0].mems[0].sections
	testSections = true
	b = encodeCheckpoint(memOnly)
	testSections = false
	if _, err := decodeCheckpoint(b); !errors.Is(err, ErrCorruptCheckpoint) {
		t.Fatalf("unknown memory section: got %v, want ErrCorruptCheckpoint", err)
	}
	testSections = true
	twice := randomCheckpointLike(cp)
	twice.colls[0].sections = []ckptSection{{Tag: sectTest, Data: []byte{1}}, {Tag: sectTest, Data: []byte{2}}}
	if _, err := decodeCheckpoint(encodeCheckpoint(twice)); !errors.Is(err, ErrCorruptCheckpoint) {
		t.Fatalf("a tag twice: got %v, want ErrCorruptCheckpoint", err)
	}
}

// TestSectionsSurviveCheckpointChain: sections written through the real
// checkpoint path (a full checkpoint, then deltas) reach recovery: a
// delta's collection sections replace the earlier ones, a memory's travel
// with it.
func TestSectionsSurviveCheckpointChain(t *testing.T) {
	setTestSections(t)
	var mu sync.Mutex
	collData := []byte("v1")
	memData := map[uint64][]byte{}
	testCollSections = func(c *Collection) []ckptSection {
		mu.Lock()
		defer mu.Unlock()
		return []ckptSection{{Tag: sectTest, Data: append([]byte(nil), collData...)}}
	}
	testMemSections = func(c *Collection, id uint64) []ckptSection {
		mu.Lock()
		defer mu.Unlock()
		if d, ok := memData[id]; ok {
			return []ckptSection{{Tag: memSectTest, Data: append([]byte(nil), d...)}}
		}
		return nil
	}
	dir := t.TempDir()
	opts := Options{Sync: wal.SyncNone, CheckpointInterval: -1, Logf: t.Logf}
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Create("s", NewConfig(4)); err != nil {
		t.Fatal(err)
	}
	c, _ := db.Collection("s")
	var ids []uint64
	for i := range 10 {
		id, err := c.Add(AddRequest{Vector: []float32{1, float32(i), 0, 1}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	memData[ids[0]] = []byte("m0")
	if err := db.CheckpointFull(); err != nil {
		t.Fatal(err)
	}
	// A delta: memory 1's section changes with its Q (a reward marks it
	// dirty), the collection's section changes.
	mu.Lock()
	collData = []byte("v2")
	memData[ids[1]] = []byte("m1")
	mu.Unlock()
	if _, err := c.Reward(1, []uint64{ids[1]}, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	var loaded ckptCollection
	testLoadSections = func(c *Collection, cc ckptCollection) { loaded = cc }
	db, err = Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if want := []ckptSection{{Tag: sectTest, Data: []byte("v2")}}; !reflect.DeepEqual(loaded.sections, want) {
		t.Fatalf("collection sections %v, want %v (the delta's)", loaded.sections, want)
	}
	got := map[uint64]string{}
	for _, m := range loaded.mems {
		for _, s := range m.sections {
			got[m.id] = string(s.Data)
		}
	}
	if want := map[uint64]string{ids[0]: "m0", ids[1]: "m1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("memory sections %v, want %v", got, want)
	}
}

// TestCheckpointSectionPastTheEnd: a section length claiming more bytes
// than the file holds is refused before anything that size is allocated.
func TestCheckpointSectionPastTheEnd(t *testing.T) {
	setTestSections(t)
	cp := randomCheckpointLike(randomCheckpoint(rand.New(rand.NewSource(5)), 0))
	cp.colls[0].sections = []ckptSection{{Tag: sectTest, Data: []byte("abcd")}}
	b := encodeCheckpoint(cp)
	at := len(b) - 8 - 4 // the checksum, the data
	if string(b[at:at+4]) != "abcd" || le.Uint32(b[at-4:]) != 4 {
		t.Fatalf("section not found at %d", at)
	}
	le.PutUint32(b[at-4:], 0xfffffff0)
	b = resum(b)
	before := allocatedBytes()
	if _, err := decodeCheckpoint(b); !errors.Is(err, ErrCorruptCheckpoint) {
		t.Fatalf("section past the end: got %v, want ErrCorruptCheckpoint", err)
	}
	if used := allocatedBytes() - before; used > 1<<20 {
		t.Errorf("refusing a 4 GiB section allocated %d bytes", used)
	}
}
