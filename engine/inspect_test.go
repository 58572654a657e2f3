package engine

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memrl/memrl/ivfpq"
	"github.com/memrl/memrl/vfs"
	"github.com/memrl/memrl/wal"
)

// inspectDB makes a database on a MemFS with every kind of record: a
// create with indexed fields, adds (plain, with key, attributes and
// expiry), rewards, a delete, attribute, payload and expiry updates, an
// index change, a drop; a full checkpoint and a delta. It returns the
// file system once crashed (the log from the full checkpoint on), the
// indexed collection's folder, and the file system as it was before the
// checkpoint (the whole log).
func inspectDB(t *testing.T) (*vfs.MemFS, string, *vfs.MemFS) {
	t.Helper()
	clock := &histClock{now: time.Unix(1_800_000_000, 0)}
	fs := vfs.NewMemFS()
	o := histOpts(fs, clock, 0)
	o.Logf = t.Logf
	db := openMemWith(t, o)
	cfg := Config{Dim: 8, Metric: L2, Alpha: 0.5, Index: IndexConfig{Kind: IndexIVFPQ, NList: 4, PQBits: 4, TrainThreshold: 40}, Indexed: []string{"user"}}
	c := mustColl(t, db, "ix", cfg)
	for id := uint64(1); id <= 260; id++ { // training needs 256
		req := AddRequest{Vector: crashIndexVec(id), ID: id, HasID: true, Payload: []byte(fmt.Sprint("p", id))}
		if id%3 == 0 {
			req.Key, req.Attrs, req.TTL = fmt.Sprint("k", id), []byte(`{"user":"u1"}`), time.Hour
		}
		if _, err := c.Add(req); err != nil {
			t.Fatal(err)
		}
	}
	waitIndexed(t, c)
	waitIndexSaved(t, c)
	c.Reward(1, []uint64{1, 2, 3}, nil)
	early := fs.Crash(vfs.DropUnsynced, nil)
	if err := db.CheckpointFull(); err != nil {
		t.Fatal(err)
	}
	c.Reward(0.5, []uint64{1}, nil)
	c.Delete([]uint64{4, 5})
	c.SetAttrs(ByID(6), []byte(`{"user":"u2"}`))
	c.SetPayload(ByID(7), []byte("new"))
	c.ExpireDeferred(ByID(8), time.Minute)
	c.IndexField("step", true)
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	c.Reward(-1, []uint64{2}, nil)
	mustColl(t, db, "gone", NewConfig(2))
	db.Drop("gone")
	dir := c.dir
	// Crash rather than Close: the log keeps its records.
	return fs.Crash(vfs.DropUnsynced, nil), dir, early
}

func TestDumpWAL(t *testing.T) {
	fs, _, early := inspectDB(t)
	var out bytes.Buffer
	if err := DumpWAL(&out, early, "/db"); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	s := out.String()
	for _, want := range []string{
		"segment /db/wal/0000000000000001.wal: number 1, first LSN 1", "1\t@40\tcreate uid=1 name=\"ix\" dim=8 metric=L2", "indexed=user",
		"add uid=1 id=1 row=0 payoff=0 paylen=2", `key="k3"`, `attrs="{\"user\":\"u1\"}"`, "expires=2027-",
		"q uid=1 id=1 q=0.5 visits=1 last_reward=1", "264 records\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("whole log's dump lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(s)
	}
	out.Reset()
	if err := DumpWAL(&out, fs, "/db"); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	s = out.String()
	for _, want := range []string{
		"delete uid=1 n=2 ids=4,5", "setattrs uid=1 id=6", "setpayload uid=1 id=7", "expire uid=1 id=8",
		"indexed uid=1 fields=step,user", "q uid=1 id=2 q=-0.25 visits=2 last_reward=-1", "create uid=2", "drop uid=2",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("dump lacks %q", want)
		}
	}
	// Each record line once: as many as the log replays from its start.
	lines := strings.Count(s, "\n@") + strings.Count(s, "\t@")
	if !strings.HasSuffix(s, fmt.Sprintf("%d records\n", lines)) {
		t.Errorf("record count line: %q (counted %d)", s[strings.LastIndex(s[:len(s)-1], "\n")+1:], lines)
	}
	if t.Failed() {
		t.Log(s)
	}
	// A segment file alone, and the wal folder.
	paths, _ := wal.SegmentPaths(fs, "/db/wal")
	out.Reset()
	if err := DumpWAL(&out, fs, paths[len(paths)-1]); err != nil || !strings.Contains(out.String(), "drop uid=2") {
		t.Fatalf("one segment: %v\n%s", err, out.String())
	}
}

// TestDumpWALDamaged: damage in the middle of a segment prints the
// records before it and an error naming the file and offset, called
// damage since valid frames follow.
func TestDumpWALDamaged(t *testing.T) {
	fs, _, _ := inspectDB(t)
	paths, _ := wal.SegmentPaths(fs, "/db/wal")
	p := paths[0]
	b, _ := vfs.ReadFile(fs, p)
	// Damage the third record's frame.
	var offs []int64
	wal.InspectSegment(fs, p, func(wal.SegmentInfo) {}, func(_ wal.LSN, off int64, _ []byte) error {
		offs = append(offs, off)
		return nil
	})
	if len(offs) < 4 {
		t.Fatalf("only %d records in %s", len(offs), p)
	}
	b[offs[2]+30] ^= 0xFF
	vfs.WriteFileAtomic(fs, p, b)
	var out bytes.Buffer
	err := DumpWAL(&out, fs, p)
	var ce *wal.CorruptionError
	if !errors.As(err, &ce) || ce.Offset != offs[2] || !strings.Contains(err.Error(), "damage, not a torn tail") {
		t.Fatalf("damaged segment: %v", err)
	}
	if n := strings.Count(out.String(), "\t@"); n != 2 {
		t.Fatalf("printed %d records before the damage, want 2:\n%s", n, out.String())
	}
	// A cut last frame: a torn tail.
	vfs.WriteFileAtomic(fs, p, b[:offs[3]+10])
	if err := DumpWAL(&out, fs, p); err == nil || !strings.Contains(err.Error(), "torn tail") {
		t.Fatalf("torn segment: %v", err)
	}
}

func TestDumpCheckpoint(t *testing.T) {
	fs, _, _ := inspectDB(t)
	var out bytes.Buffer
	if err := DumpCheckpoint(&out, fs, "/db/CHECKPOINT", false); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	s := out.String()
	for _, want := range []string{"version 6", "kind full", `collection uid=1 name="ix" dim=8`, "memories=260 tombstones=0 rows=260", "histories=3 history_entries=3"} {
		if !strings.Contains(s, want) {
			t.Errorf("full dump lacks %q:\n%s", want, s)
		}
	}
	out.Reset()
	if err := DumpCheckpoint(&out, fs, "/db/CHECKPOINT.1", true); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	s = out.String()
	for _, want := range []string{"kind delta", "seq 1", "tombstones=2", "tombstones: 4,5", "memory id=1 row=0",
		"section history (tag 1)", "reward=0.5 q=0.5 visits=2", "reward=1 q=0.5 visits=1", `key="k6"`} {
		if !strings.Contains(s, want) {
			t.Errorf("delta dump lacks %q:\n%s", want, s)
		}
	}
}

// TestDumpCheckpointDamaged: a flipped byte is a checksum mismatch, the
// file still decoded as far as it goes; a cut file stops at an offset.
func TestDumpCheckpointDamaged(t *testing.T) {
	fs, _, _ := inspectDB(t)
	b, _ := vfs.ReadFile(fs, "/db/CHECKPOINT")
	bad := bytes.Clone(b)
	bad[len(bad)-20] ^= 1
	vfs.WriteFileAtomic(fs, "/db/CHECKPOINT", bad)
	var out bytes.Buffer
	err := DumpCheckpoint(&out, fs, "/db/CHECKPOINT", false)
	if !errors.Is(err, ErrCorruptCheckpoint) || !strings.Contains(out.String(), "CHECKSUM MISMATCH") {
		t.Fatalf("flipped byte: %v\n%s", err, out.String())
	}
	vfs.WriteFileAtomic(fs, "/db/CHECKPOINT", b[:len(b)/2])
	out.Reset()
	err = DumpCheckpoint(&out, fs, "/db/CHECKPOINT", false)
	if err == nil || !strings.Contains(err.Error(), "stopped at byte") || !strings.Contains(out.String(), "kind full") {
		t.Fatalf("cut file: %v\n%s", err, out.String())
	}
	vfs.WriteFileAtomic(fs, "/db/CHECKPOINT", []byte("not a checkpoint at all"))
	if err := DumpCheckpoint(&out, fs, "/db/CHECKPOINT", false); !errors.Is(err, ErrCorruptCheckpoint) {
		t.Fatalf("garbage: %v", err)
	}
}

func TestDumpIndexAndVectors(t *testing.T) {
	fs, dir, _ := inspectDB(t)
	path := filepath.Join(dir, "ivfpq", ivfpq.FileName)
	fi, err := ivfpq.Inspect(fs, path)
	if err != nil || fi.Params.NList != 4 || fi.Params.Dim != 8 || fi.Rows < 256 || len(fi.ListSizes) != 4 || fi.Version != 4 || len(fi.DamagedLists) != 0 {
		t.Fatalf("Inspect = %+v, %v", fi, err)
	}
	var sum uint32
	for _, n := range fi.ListSizes {
		sum += n
	}
	if sum != fi.Rows {
		t.Fatalf("lists hold %d, rows %d", sum, fi.Rows)
	}
	// A damaged list is reported with its offset; a damaged header is an error.
	b, _ := vfs.ReadFile(fs, path)
	bad := bytes.Clone(b)
	bad[len(bad)-1] ^= 0xFF
	vfs.WriteFileAtomic(fs, path, bad)
	if fi, err := ivfpq.Inspect(fs, path); err != nil || len(fi.DamagedLists) != 1 || fi.DamagedLists[0].Offset < fi.DataOff {
		t.Fatalf("damaged list: %+v, %v", fi.DamagedLists, err)
	}
	bad = bytes.Clone(b)
	bad[20] ^= 1
	vfs.WriteFileAtomic(fs, path, bad)
	if _, err := ivfpq.Inspect(fs, path); !errors.Is(err, ivfpq.ErrCorrupt) || !strings.Contains(err.Error(), "header") {
		t.Fatalf("damaged header: %v", err)
	}
	var out bytes.Buffer
	if err := DumpVectors(&out, fs, filepath.Join(dir, "vectors.f32")); err != nil ||
		!strings.Contains(out.String(), "dim 8") || !strings.Contains(out.String(), "260 row checksums") || !strings.Contains(out.String(), "room for 1024 rows") {
		t.Fatalf("vectors: %v\n%s", err, out.String())
	}
}

// TestDumpWALMaintenanceRecords: the records of snapshots, rollbacks and
// prune policies are named and decoded, not "unknown to this build".
func TestDumpWALMaintenanceRecords(t *testing.T) {
	fs := vfs.NewMemFS()
	db, err := Open("/db", crashOpts(fs))
	if err != nil {
		t.Fatal(err)
	}
	c := mustColl(t, db, "m", NewConfig(4))
	for id := uint64(1); id <= 5; id++ {
		if _, err := c.Add(AddRequest{Vector: []float32{1, float32(id), 0, 0}, ID: id, HasID: true}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Snapshot("before"); err != nil {
		t.Fatal(err)
	}
	c.Delete([]uint64{2})
	if _, err := c.Rollback("before"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteSnapshot("before"); err != nil {
		t.Fatal(err)
	}
	if err := c.SetPrunePolicy(&PrunePolicy{Prune: PruneOptions{MaxCount: 3, HasMaxCount: true}, Every: time.Hour}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := DumpWAL(&out, fs.Crash(vfs.DropUnsynced, nil), "/db"); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	s := out.String()
	for _, want := range []string{`snapshot uid=1 seq=`, `name="before"`, "memories=5", "rollback-batch uid=1",
		"rollback uid=1", "changed=1", "delsnapshot uid=1", "prune-policy uid=1"} {
		if !strings.Contains(s, want) {
			t.Errorf("dump lacks %q", want)
		}
	}
	if strings.Contains(s, "unknown") || strings.Contains(s, "UNDECODABLE") {
		t.Errorf("dump has records it cannot name or decode")
	}
	if t.Failed() {
		t.Log(s)
	}
}
