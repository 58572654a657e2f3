package engine

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"

	"github.com/memrl/memrl/vfs"
	"github.com/memrl/memrl/wal"
)

func batchReqs(n, dim int) []AddRequest {
	reqs := make([]AddRequest, n)
	for i := range reqs {
		v := make([]float32, dim)
		for j := range v {
			v[j] = float32((i*7+j*3)%11) + 1
		}
		reqs[i] = AddRequest{Vector: v, Payload: []byte(fmt.Sprintf("payload %d", i))}
	}
	return reqs
}

// TestAddBatchIDsAsSingleAdds: a batch gives the ids that the same adds
// one by one would, explicit and automatic ones mixed, and stores every
// memory with its payload, Q and vector.
func TestAddBatchIDsAsSingleAdds(t *testing.T) {
	db, _ := openTemp(t, Options{Sync: wal.SyncNone})
	reqs := batchReqs(6, 4)
	reqs[1].ID, reqs[1].HasID = 10, true
	reqs[3].ID, reqs[3].HasID = 3, true
	reqs[4].Q, reqs[4].HasQ = 0.75, true
	b := mustColl(t, db, "batch", NewConfig(4))
	got, err := b.AddBatch(reqs)
	if err != nil {
		t.Fatal(err)
	}
	s := mustColl(t, db, "single", NewConfig(4))
	var want []uint64
	for _, r := range reqs {
		id, err := s.Add(r)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, id)
	}
	if !slices.Equal(got, want) || !slices.Equal(got, []uint64{1, 10, 11, 3, 12, 13}) {
		t.Fatalf("batch ids %v, single adds %v", got, want)
	}
	for i, id := range got {
		mi, err := b.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(mi.Payload, reqs[i].Payload) {
			t.Errorf("memory %d: payload %q, want %q", id, mi.Payload, reqs[i].Payload)
		}
		wantQ := 0.0
		if reqs[i].HasQ {
			wantQ = reqs[i].Q
		}
		if mi.Q != wantQ {
			t.Errorf("memory %d: Q %v, want %v", id, mi.Q, wantQ)
		}
		sv, _ := s.Get(id)
		if !slices.Equal(mi.Vector, sv.Vector) {
			t.Errorf("memory %d: vector %v, single add stored %v", id, mi.Vector, sv.Vector)
		}
	}
}

// TestAddBatchAllOrNothing: one bad memory anywhere in a batch refuses the
// batch with a BatchError naming it, and nothing is added or logged.
func TestAddBatchAllOrNothing(t *testing.T) {
	db, _ := openTemp(t, Options{Sync: wal.SyncNone})
	c := mustColl(t, db, "c", NewConfig(4))
	add(t, c, 5, 0, 1, 2, 3, 4)
	cases := []struct {
		name  string
		bad   int
		spoil func(r []AddRequest)
		want  error
	}{
		{"dimension", 2, func(r []AddRequest) { r[2].Vector = r[2].Vector[:3] }, ErrDimension},
		{"NaN", 4, func(r []AddRequest) { r[4].Vector[1] = float32(math.NaN()) }, ErrBadVector},
		{"payload", 0, func(r []AddRequest) { r[0].Payload = make([]byte, MaxPayload+1) }, ErrPayloadTooLarge},
		{"Q", 3, func(r []AddRequest) { r[3].Q, r[3].HasQ = 1e300, true }, ErrBadNumber},
		{"live id", 1, func(r []AddRequest) { r[1].ID, r[1].HasID = 5, true }, ErrIDExists},
		{"id twice", 3, func(r []AddRequest) { r[1].ID, r[1].HasID, r[3].ID, r[3].HasID = 9, true, 9, true }, ErrIDExists},
		{"auto id then same explicit", 1, func(r []AddRequest) { r[1].ID, r[1].HasID = 6, true }, ErrIDExists},
		{"id above MaxID", 4, func(r []AddRequest) { r[4].ID, r[4].HasID = MaxID+1, true }, ErrBadParam},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reqs := batchReqs(5, 4)
			tc.spoil(reqs)
			recs, rows, next := db.WALStats().Records, mustInfo(t, c).Rows, mustInfo(t, c).NextID
			ids, err := c.AddBatch(reqs)
			var be *BatchError
			if !errors.As(err, &be) || be.Index != tc.bad || be.Count != 5 || !errors.Is(err, tc.want) {
				t.Fatalf("got ids %v, err %v; want a BatchError at %d wrapping %v", ids, err, tc.bad, tc.want)
			}
			if want := fmt.Sprintf("memory %d: ", tc.bad+1); err.Error()[:len(want)] != want {
				t.Errorf("error %q does not start with %q", err, want)
			}
			in := mustInfo(t, c)
			if in.Count != 1 || in.Rows != rows || in.NextID != next || db.WALStats().Records != recs {
				t.Fatalf("after a refused batch: count %d rows %d next %d records %d; want 1, %d, %d, %d",
					in.Count, in.Rows, in.NextID, db.WALStats().Records, rows, next, recs)
			}
		})
	}
	if _, err := c.AddBatch(nil); !errors.Is(err, ErrBadParam) {
		t.Fatalf("empty batch: %v", err)
	}
}

func mustInfo(t *testing.T, c *Collection) Info {
	t.Helper()
	in, err := c.Info()
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// TestAddBatchOneFsync: with SyncAlways, a batch of 1000 memories costs
// one fsync of the log, and once acknowledged survives a crash that drops
// every unsynced byte.
func TestAddBatchOneFsync(t *testing.T) {
	fs := vfs.NewMemFS()
	// Segments large enough that no roll (which fsyncs too) comes into it.
	opts := Options{FS: fs, Sync: wal.SyncAlways, SegmentSize: 64 << 20,
		CheckpointInterval: -1, CheckpointBytes: -1, Logf: t.Logf}
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	c := mustColl(t, db, "c", NewConfig(16))
	reqs := batchReqs(1000, 16)
	before := db.WALStats().Syncs
	ids, err := c.AddBatch(reqs)
	if err != nil {
		t.Fatal(err)
	}
	if got := db.WALStats().Syncs - before; got != 1 {
		t.Fatalf("%d fsyncs for a batch of %d, want 1", got, len(reqs))
	}
	opts.FS = fs.Crash(vfs.DropUnsynced, rand.New(rand.NewSource(1)))
	db2, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	c2, err := db2.Collection("c")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := c2.Count(); n != len(reqs) {
		t.Fatalf("%d memories after the crash, want %d", n, len(reqs))
	}
	for i, id := range ids {
		mi, err := c2.Get(id)
		if err != nil || !bytes.Equal(mi.Payload, reqs[i].Payload) {
			t.Fatalf("memory %d after the crash: %v, payload %q", id, err, mi.Payload)
		}
	}
}

// TestAddBatchFileWriteFails: a file write that fails part-way through a
// batch (after some of its chunks were written) fails the batch with
// nothing added or logged; the next batch reuses the rows and offsets, and
// everything verifies, before and after a crash.
func TestAddBatchFileWriteFails(t *testing.T) {
	fs := vfs.NewMemFS()
	opts := Options{FS: fs, Sync: wal.SyncAlways, CheckpointInterval: -1, CheckpointBytes: -1, Logf: t.Logf}
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	c := mustColl(t, db, "c", NewConfig(128))
	first, err := c.AddBatch(batchReqs(10, 128))
	if err != nil {
		t.Fatal(err)
	}
	// 3000 rows of 512 bytes: two chunks of the vector file. A failed
	// write of the first vector chunk leaves nothing written; of the
	// first checksum chunk, one vector chunk written; of the payloads,
	// every vector row and checksum written.
	for _, match := range []string{"vectors.f32", "vectors.sum", "payloads.dat"} {
		in, recs := mustInfo(t, c), db.WALStats().Records
		fs.FailNextWrite(match)
		_, err := c.AddBatch(batchReqs(3000, 128))
		if !errors.Is(err, vfs.ErrInjected) {
			t.Fatalf("%s fails: %v, want the injected error", match, err)
		}
		var be *BatchError
		if errors.As(err, &be) {
			t.Fatalf("%s fails: a file error blamed on memory %d", match, be.Index+1)
		}
		if got := mustInfo(t, c); got.Count != in.Count || got.Rows != in.Rows || got.NextID != in.NextID || db.WALStats().Records != recs {
			t.Fatalf("%s fails: count %d→%d rows %d→%d next %d→%d records %d→%d", match,
				in.Count, got.Count, in.Rows, got.Rows, in.NextID, got.NextID, recs, db.WALStats().Records)
		}
	}
	second, err := c.AddBatch(batchReqs(3000, 128))
	if err != nil {
		t.Fatal(err)
	}
	check := func(c *Collection) {
		t.Helper()
		if n, _ := c.Count(); n != 3010 {
			t.Fatalf("%d memories, want 3010", n)
		}
		rep, err := c.Verify()
		if err != nil || rep.Damaged != 0 {
			t.Fatalf("Verify: %+v, %v", rep, err)
		}
		for _, ids := range [][]uint64{first, second} {
			for i, id := range ids {
				mi, err := c.Get(id)
				if err != nil || !bytes.Equal(mi.Payload, []byte(fmt.Sprintf("payload %d", i))) {
					t.Fatalf("memory %d: %v, payload %q", id, err, mi.Payload)
				}
			}
		}
	}
	check(c)
	opts.FS = fs.Crash(vfs.DropUnsynced, rand.New(rand.NewSource(2)))
	db2, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	c2, _ := db2.Collection("c")
	check(c2)
}
