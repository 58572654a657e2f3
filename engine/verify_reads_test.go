package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/memrl/memrl/vfs"
)

// readCountFS is the OS file system, counting the ReadAt calls made on
// files whose name ends in suffix.
type readCountFS struct {
	vfs.FS
	suffix string
	reads  atomic.Int64
}

type readCountFile struct {
	vfs.File
	reads *atomic.Int64
}

func (f readCountFile) ReadAt(p []byte, off int64) (int, error) {
	f.reads.Add(1)
	return f.File.ReadAt(p, off)
}

func (fs *readCountFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || !strings.HasSuffix(name, fs.suffix) {
		return f, err
	}
	return readCountFile{f, &fs.reads}, nil
}

func (fs *readCountFS) Open(name string) (vfs.File, error) {
	f, err := fs.FS.Open(name)
	return fs.wrap(name, f, err)
}

func (fs *readCountFS) OpenReadWrite(name string) (vfs.File, error) {
	f, err := fs.FS.OpenReadWrite(name)
	return fs.wrap(name, f, err)
}

// payloadReadsFixture writes n memories, every third with an empty
// payload, checkpoints and closes; it returns the database folder and
// the payloads by id.
func payloadReadsFixture(t *testing.T, n int) (string, map[uint64][]byte) {
	t.Helper()
	dir := t.TempDir()
	db, err := Open(dir, Options{CheckpointInterval: -1, CheckpointBytes: -1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	cfg := NewConfig(2)
	cfg.Metric = L2
	c := mustColl(t, db, "c", cfg)
	pays := map[uint64][]byte{}
	var reqs []AddRequest
	for id := uint64(1); id <= uint64(n); id++ {
		var p []byte
		if id%3 != 0 {
			p = []byte(fmt.Sprintf("payload-%d", id))
		}
		pays[id] = p
		reqs = append(reqs, AddRequest{Vector: []float32{float32(id), 1}, Payload: p, ID: id, HasID: true})
		if len(reqs) == 500 || id == uint64(n) {
			if _, err := c.AddBatch(reqs); err != nil {
				t.Fatal(err)
			}
			reqs = reqs[:0]
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, pays
}

// TestOpenReadsPayloadsInChunks: Open verifies every live payload, and
// used to read each with a pread of its own, a million reads (1.1 s of CPU)
// for a 1M-memory collection, most of a warm restart (bench/README.md
// "Cold open"). Payloads next to each other in the file are now read
// together, one read per chunk of verifyChunk memories.
func TestOpenReadsPayloadsInChunks(t *testing.T) {
	const n = 5000
	dir, pays := payloadReadsFixture(t, n)
	fs := &readCountFS{FS: vfs.Default, suffix: "payloads.dat"}
	db, err := Open(dir, Options{FS: fs, CheckpointInterval: -1, CheckpointBytes: -1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got, most := fs.reads.Load(), int64(n/verifyChunk+2); got > most {
		t.Fatalf("Open read the payload file %d times for %d payloads, want at most %d", got, n, most)
	}
	c, err := db.Collection("c")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := c.Verify()
	if err != nil || rep.Damaged != 0 || rep.Payloads != n {
		t.Fatalf("Verify: %+v, %v; want %d payloads, no damage", rep, err, n)
	}
	for _, id := range []uint64{1, 2, 3, n / 2, n} {
		m, err := c.Get(id)
		if err != nil || string(m.Payload) != string(pays[id]) {
			t.Fatalf("Get(%d): payload %q, %v; want %q", id, m.Payload, err, pays[id])
		}
	}
}

// TestChunkedPayloadCheckNamesTheDamagedOne: with payloads read a chunk at
// a time, a flipped byte in one payload in the middle of a chunk is
// reported for that memory alone, at Open and by Verify, and the others
// still read back.
func TestChunkedPayloadCheckNamesTheDamagedOne(t *testing.T) {
	const n = 3000
	dir, pays := payloadReadsFixture(t, n)
	db, err := Open(dir, Options{CheckpointInterval: -1, CheckpointBytes: -1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	c, err := db.Collection("c")
	if err != nil {
		t.Fatal(err)
	}
	const bad = 1001
	off := int64(c.mems[bad].payOff)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(c.dir, "payloads.dat")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[off+2] ^= 0x40
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}

	var logged []string
	db, err = Open(dir, Options{CheckpointInterval: -1, CheckpointBytes: -1,
		Logf: func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if len(logged) != 1 || !strings.Contains(logged[0], fmt.Sprintf("memory %d payload", bad)) ||
		!strings.Contains(logged[0], "1 damaged") {
		t.Fatalf("Open logged %q, want one line naming memory %d's payload alone", logged, bad)
	}
	c, _ = db.Collection("c")
	rep, err := c.Verify()
	if err != nil || rep.Damaged != 1 || rep.Damage[0].What != "payload" || rep.Damage[0].ID != bad ||
		rep.Payloads != n {
		t.Fatalf("Verify: %+v, %v; want memory %d's payload alone damaged of %d", rep, err, bad, n)
	}
	for _, id := range []uint64{bad - 1, bad + 1, 2, n} {
		m, err := c.Get(id)
		if err != nil || string(m.Payload) != string(pays[id]) {
			t.Fatalf("Get(%d): payload %q, %v; want %q", id, m.Payload, err, pays[id])
		}
	}
	if _, err := c.Get(bad); err == nil {
		t.Fatalf("Get(%d) served a damaged payload", bad)
	}
}
