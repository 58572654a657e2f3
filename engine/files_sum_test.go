package engine

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// sumFixture is a small database on the OS file system whose collection
// "c" holds a few memories, checkpointed, so that its files hold every
// byte the collection needs.
type sumFixture struct {
	dir   string
	coll  string // the collection's folder
	vecs  map[uint64][]float32
	pays  map[uint64][]byte
	nrows int
}

func newSumFixture(t *testing.T) *sumFixture {
	t.Helper()
	dir := t.TempDir()
	db, err := Open(dir, Options{CheckpointInterval: -1, CheckpointBytes: -1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	cfg := NewConfig(2)
	cfg.Metric = L2 // vectors stored as given
	c := mustColl(t, db, "c", cfg)
	fx := &sumFixture{dir: dir, coll: c.dir, vecs: map[uint64][]float32{}, pays: map[uint64][]byte{}}
	for id := uint64(1); id <= 3; id++ {
		v := []float32{float32(id), -float32(id)}
		p := []byte(fmt.Sprintf("pay-%d", id))
		if _, err := c.Add(AddRequest{Vector: v, Payload: p, ID: id, HasID: true}); err != nil {
			t.Fatal(err)
		}
		fx.vecs[id], fx.pays[id] = v, p
	}
	fx.nrows = 3
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return fx
}

// checkServed opens the database and checks that nothing damaged is
// served: every Get and every retrieval either fails or returns the
// memories' true vectors, payloads and similarities. It returns whether
// any read failed, and the open database (nil if Open failed).
func (fx *sumFixture) checkServed(t *testing.T, what string) (failed bool, db *DB, openErr error) {
	t.Helper()
	db, err := Open(fx.dir, Options{CheckpointInterval: -1, CheckpointBytes: -1, Logf: func(string, ...any) {}})
	if err != nil {
		return true, nil, err
	}
	c, err := db.Collection("c")
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	for id, v := range fx.vecs {
		m, err := c.Get(id)
		if err != nil {
			failed = true
			continue
		}
		if !bytes.Equal(m.Payload, fx.pays[id]) || m.Vector[0] != v[0] || m.Vector[1] != v[1] {
			t.Fatalf("%s: get %d served %q %v, want %q %v", what, id, m.Payload, m.Vector, fx.pays[id], v)
		}
	}
	for _, q := range fx.vecs {
		opt := NewRetrieveOptions()
		opt.WithPayload = true
		res, err := c.Retrieve(q, opt)
		if err != nil {
			failed = true
			continue
		}
		for _, r := range res {
			v := fx.vecs[r.ID]
			want := -(math.Pow(float64(q[0]-v[0]), 2) + math.Pow(float64(q[1]-v[1]), 2))
			if !bytes.Equal(r.Payload, fx.pays[r.ID]) || math.Abs(r.Sim-want) > 1e-4 {
				t.Fatalf("%s: retrieval served id %d payload %q sim %v, want %q %v", what, r.ID, r.Payload, r.Sim, fx.pays[r.ID], want)
			}
		}
	}
	return failed, db, nil
}

// flipEach flips, in turn, every byte in [from, to) of the collection file
// name, calls check, and restores the byte.
func (fx *sumFixture) flipEach(t *testing.T, name string, from, to int64, check func(what string)) {
	t.Helper()
	path := filepath.Join(fx.coll, name)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	to = min(to, int64(len(orig)))
	if from >= to {
		t.Fatalf("%s: nothing to flip in [%d, %d) of %d bytes", name, from, to, len(orig))
	}
	for off := from; off < to; off++ {
		b := bytes.Clone(orig)
		b[off] ^= 0x20
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("%s byte %d", name, off))
		if err := os.WriteFile(path, orig, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFlippedByteNeverServed flips every byte of the collection's vector,
// checksum and payload files of a small database, in turn, and reopens it:
// no flipped byte is ever served as a vector, a similarity or a payload,
// and every one is detected: Open refuses a damaged checksum header, and
// otherwise Verify reports the damage.
func TestFlippedByteNeverServed(t *testing.T) {
	fx := newSumFixture(t)
	check := func(what string) {
		_, db, openErr := fx.checkServed(t, what)
		if db == nil {
			if !errors.Is(openErr, ErrCorrupt) {
				t.Fatalf("%s: open: %v, want ErrCorrupt", what, openErr)
			}
			return
		}
		defer db.Close()
		c, _ := db.Collection("c")
		rep, err := c.Verify()
		if err != nil {
			t.Fatalf("%s: verify: %v", what, err)
		}
		if rep.Damaged == 0 || !errors.Is(rep.Err(), ErrCorrupt) {
			t.Fatalf("%s: not detected: %+v", what, rep)
		}
	}
	fx.flipEach(t, "vectors.f32", 0, int64(fx.nrows*8), check)
	fx.flipEach(t, "vectors.sum", 0, sumsOffset(uint32(fx.nrows)), check)
	fx.flipEach(t, "payloads.dat", 0, math.MaxInt64, check)

	// Undamaged, the collection verifies clean.
	failed, db, err := fx.checkServed(t, "undamaged")
	if err != nil || failed {
		t.Fatalf("undamaged: open %v, a read failed: %v", err, failed)
	}
	defer db.Close()
	c, _ := db.Collection("c")
	rep, err := c.Verify()
	if err != nil || rep.Damaged != 0 || rep.Rows != 3 || rep.Payloads != 3 || !rep.SumsChecked {
		t.Fatalf("verify undamaged: %+v, %v", rep, err)
	}
}

// TestDamageWhileOpenIsReported flips bytes under a running database. With
// the vectors read through a shared mapping the damage is visible at once:
// the reads that meet it fail with ErrCorrupt, naming the memory. Resident
// vectors were copied at open, so reads go on serving the intact copy.
// Either way Verify, which reads the file, names it, and after a restart
// reads fail.
func TestDamageWhileOpenIsReported(t *testing.T) {
	for _, mapped := range []bool{true, false} {
		t.Run(map[bool]string{true: "mapped", false: "resident"}[mapped], func(t *testing.T) {
			fx := newSumFixture(t)
			var logged []string
			db, err := Open(fx.dir, Options{CheckpointInterval: -1, CheckpointBytes: -1, MapFiles: mapped,
				Logf: func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			c, _ := db.Collection("c")
			flip := func(name string, off int64) {
				f, err := os.OpenFile(filepath.Join(fx.coll, name), os.O_RDWR, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				b := []byte{0}
				f.ReadAt(b, off)
				b[0] ^= 1
				f.WriteAt(b, off)
			}
			// Memory 2's vector (row 1) and memory 3's payload.
			flip("vectors.f32", 8+4)
			m3 := c.mems[3]
			flip("payloads.dat", int64(m3.payOff)+1)

			if m, err := c.Get(2); mapped && (!errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "memory 2")) ||
				!mapped && (err != nil || !slices.Equal(m.Vector, fx.vecs[2])) {
				t.Fatalf("get 2: %v", err)
			}
			if _, err := c.Get(3); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "memory 3") {
				t.Fatalf("get 3: %v", err)
			}
			if m, err := c.Get(1); err != nil || string(m.Payload) != "pay-1" {
				t.Fatalf("get 1: %v", err)
			}
			// A damaged vector among the candidates is left out (and logged);
			// the retrieval goes on with the others.
			opt := NewRetrieveOptions()
			if res, err := c.Retrieve(fx.vecs[1], opt); err != nil || len(res) == 0 || mapped && slices.ContainsFunc(res, func(r Result) bool { return r.ID == 2 }) {
				t.Fatalf("retrieve meeting row 1: %v, %v", res, err)
			}
			opt.WithPayload = true
			opt.K1 = 1
			if _, err := c.Retrieve(fx.vecs[3], opt); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("retrieve with memory 3's payload: %v", err)
			}
			if res, err := c.Retrieve(fx.vecs[1], opt); err != nil || res[0].ID != 1 {
				t.Fatalf("retrieve of 1 alone: %v %v", res, err)
			}
			rep, err := c.Verify()
			if err != nil {
				t.Fatal(err)
			}
			if rep.Damaged != 2 || rep.Damage[0].What != "vector" || rep.Damage[0].ID != 2 ||
				rep.Damage[1].What != "payload" || rep.Damage[1].ID != 3 || rep.Damage[1].Offset != int64(m3.payOff) {
				t.Fatalf("verify: %+v", rep)
			}
			if len(logged) == 0 || !strings.Contains(strings.Join(logged, "\n"), "fails its checksum") {
				t.Fatalf("damage not logged: %q", logged)
			}
			// A restart leaves the damaged vector out of searches; Get still
			// reports it; deleting the memory clears the damage from Verify.
			db.Close()
			db, err = Open(fx.dir, Options{CheckpointInterval: -1, CheckpointBytes: -1, Logf: t.Logf})
			if err != nil {
				t.Fatal(err)
			}
			c, _ = db.Collection("c")
			opt = NewRetrieveOptions()
			if res, err := c.Retrieve(fx.vecs[2], opt); err != nil || slices.ContainsFunc(res, func(r Result) bool { return r.ID == 2 }) {
				t.Fatalf("retrieve after restart: %v, %v", res, err)
			}
			if _, err := c.Get(2); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("get 2 after restart: %v", err)
			}
			if _, err := c.Delete([]uint64{3}); err != nil {
				t.Fatal(err)
			}
			if rep, _ := c.Verify(); rep.Damaged != 1 || rep.Damage[0].ID != 2 || rep.Payloads != 2 {
				t.Fatalf("verify after deleting 3: %+v", rep)
			}
		})
	}
}

// TestLegacyCollectionIsUpgraded opens a collection in the format from
// before checksums (no vectors.sum; payloads without checksums): it reads
// back as before, gets a checksum file, serves its old payloads unchecked
// (counted by Verify) and checksums everything written since, across
// restarts.
func TestLegacyCollectionIsUpgraded(t *testing.T) {
	dir := t.TempDir()
	opts := Options{CheckpointInterval: -1, CheckpointBytes: -1, Logf: t.Logf}
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	createLegacy = true
	c := mustColl(t, db, "old", NewConfig(2))
	createLegacy = false
	for id := uint64(1); id <= 3; id++ {
		if _, err := c.Add(AddRequest{Vector: []float32{1, float32(id)}, Payload: []byte{byte(id), 'x'}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Add(AddRequest{Vector: []float32{1, 4}, Payload: []byte{4, 'x'}}); err != nil {
		t.Fatal(err)
	}
	cdir := c.dir
	db.Close()
	if st, err := os.Stat(filepath.Join(cdir, "vectors.sum")); err == nil && st.Size() != 0 {
		t.Fatalf("legacy collection has a checksum file of %d bytes", st.Size())
	}
	if b, _ := os.ReadFile(filepath.Join(cdir, "payloads.dat")); len(b) != 8 {
		t.Fatalf("legacy payload file holds %d bytes, want 8 (no checksums)", len(b))
	}
	os.Remove(filepath.Join(cdir, "vectors.sum"))

	for round := 0; round < 2; round++ {
		db, err = Open(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		c, _ = db.Collection("old")
		for id := uint64(1); id <= 4; id++ {
			m, err := c.Get(id)
			if err != nil || !bytes.Equal(m.Payload, []byte{byte(id), 'x'}) {
				t.Fatalf("round %d: get %d = %q, %v", round, id, m.Payload, err)
			}
		}
		if round == 0 {
			if _, err := c.Add(AddRequest{Vector: []float32{1, 5}, Payload: []byte{5, 'x'}}); err != nil {
				t.Fatal(err)
			}
		}
		rep, err := c.Verify()
		if err != nil || rep.Damaged != 0 || rep.LegacyPayloads != 4 || rep.Payloads != 1 || rep.Rows != 5 || !rep.SumsChecked {
			t.Fatalf("round %d: verify %+v, %v", round, rep, err)
		}
		db.Close()
	}
	// The payload added after the upgrade is checked.
	path := filepath.Join(cdir, "payloads.dat")
	b, _ := os.ReadFile(path)
	b[8] ^= 1
	os.WriteFile(path, b, 0o644)
	db, err = Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, _ = db.Collection("old")
	if _, err := c.Get(5); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("get 5 with a flipped byte: %v", err)
	}
}

// TestRemovedChecksumFileIsRebuilt: removing vectors.sum (the way out of a
// damaged header) makes Open rebuild it from the rows as found; every
// memory reads back, its old payloads unchecked, new ones checked.
func TestRemovedChecksumFileIsRebuilt(t *testing.T) {
	fx := newSumFixture(t)
	if err := os.Remove(filepath.Join(fx.coll, "vectors.sum")); err != nil {
		t.Fatal(err)
	}
	failed, db, err := fx.checkServed(t, "without vectors.sum")
	if err != nil || failed {
		t.Fatalf("open %v, a read failed: %v", err, failed)
	}
	defer db.Close()
	c, _ := db.Collection("c")
	if _, err := c.Add(AddRequest{Vector: []float32{9, 9}, Payload: []byte("new"), ID: 9, HasID: true}); err != nil {
		t.Fatal(err)
	}
	rep, err := c.Verify()
	if err != nil || rep.Damaged != 0 || rep.LegacyPayloads != 3 || rep.Payloads != 1 || rep.Rows != 4 {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
	if m, err := c.Get(9); err != nil || string(m.Payload) != "new" {
		t.Fatalf("get 9: %q, %v", m.Payload, err)
	}
}

// TestVerifyAlongsideWrites runs Verify, in tiny chunks, while adds,
// deletes and retrievals go on: it finds no damage where there is none,
// checks every row there was when it started, and (under -race) shares
// the collection safely.
func TestVerifyAlongsideWrites(t *testing.T) {
	old := verifyChunk
	verifyChunk = 7
	defer func() { verifyChunk = old }()
	db, _ := openTemp(t, Options{CheckpointInterval: -1, CheckpointBytes: -1})
	c := mustColl(t, db, "c", NewConfig(4))
	addOne := func(i int) uint64 {
		id, err := c.Add(AddRequest{Vector: []float32{1, float32(i), 2, -1}, Payload: []byte(fmt.Sprint(i))})
		if err != nil {
			t.Error(err)
		}
		return id
	}
	for i := 0; i < 200; i++ {
		addOne(i)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			id := addOne(i)
			if i%3 == 0 {
				c.Delete([]uint64{id - 1})
			}
			c.Retrieve([]float32{1, 0, 0, 0}, NewRetrieveOptions())
		}
	}()
	for k := 0; k < 20; k++ {
		rep, err := c.Verify()
		if err != nil || rep.Damaged != 0 || rep.Rows < 200 || rep.Payloads == 0 {
			t.Fatalf("verify %d: %+v, %v", k, rep, err)
		}
	}
	close(stop)
	<-done
}

// TestVerifyAcrossACompaction: a compaction that replaces the files
// between two of Verify's chunks stops it with errFilesReplaced (it was
// checking the old files' rows and payload offsets, which now name other
// bytes), not with damage that is not there or an out-of-range row; run
// again, it reports the compacted files clean.
func TestVerifyAcrossACompaction(t *testing.T) {
	old := verifyChunk
	verifyChunk = 7
	defer func() { verifyChunk = old }()
	db, _ := openTemp(t, Options{CheckpointInterval: -1, CheckpointBytes: -1})
	c := mustColl(t, db, "c", NewConfig(4))
	var ids []uint64
	for i := 0; i < 100; i++ {
		id, err := c.Add(AddRequest{Vector: []float32{1, float32(i), 2, -1}, Payload: []byte(fmt.Sprint("payload ", i))})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if _, err := c.Delete(ids[:60]); err != nil {
		t.Fatal(err)
	}
	locks := 0
	lock := func() error {
		if locks++; locks == 3 { // after the header and one chunk of rows
			if _, err := c.Compact(); err != nil {
				t.Fatal(err)
			}
		}
		return c.rlockLive()
	}
	if _, err := c.verify(lock, c.mu.RUnlock, true); !errors.Is(err, errFilesReplaced) {
		t.Fatalf("verify across a compaction: %v, want errFilesReplaced", err)
	}
	rep, err := c.Verify()
	if err != nil || rep.Damaged != 0 || rep.Rows != 40 || rep.Payloads != 40 {
		t.Fatalf("verify after the compaction: %+v, %v", rep, err)
	}
}
