package engine

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"

	"github.com/memrl/memrl/vfs"
)

// randomCheckpoint returns a checkpoint with collections of the given
// sizes whose memories are consistent with the recorded file sizes.
func randomCheckpoint(rng *rand.Rand, sizes ...int) checkpoint {
	cp := checkpoint{walLSN: rng.Uint64() >> 1, nextUID: uint64(len(sizes) + 1)}
	for i, n := range sizes {
		c := ckptCollection{uid: uint64(i + 1), name: "c" + strings.Repeat("x", i), cfg: NewConfig(4 + i),
			nrows: uint32(n + 3), paySize: uint64(n * 10), nextID: uint64(n + 1)}
		for j := 0; j < n; j++ {
			c.mems = append(c.mems, ckptMemory{id: uint64(j + 1),
				m:          memory{row: uint32(j), payOff: uint64(j * 10), payLen: uint32(rng.Intn(11)), created: rng.Int63()},
				q:          rng.NormFloat64(),
				visits:     uint64(rng.Intn(100)),
				lastReward: rng.Float64(), rewardSum: rng.Float64() * 10, updated: rng.Int63()})
		}
		cp.colls = append(cp.colls, c)
	}
	return cp
}

// withExt returns a copy of cp in which every third memory has
// attributes, a key and an expiry, which only version 4 holds.
func withExt(cp checkpoint) checkpoint {
	out := cp
	out.colls = append([]ckptCollection(nil), cp.colls...)
	for i := range out.colls {
		mems := append([]ckptMemory(nil), out.colls[i].mems...)
		for j := range mems {
			switch j % 3 {
			case 0:
				mems[j].m.ext = makeExt([]byte(fmt.Sprintf(`{"n":%d,"tags":["a"]}`, j)), fmt.Sprintf("key-%d", j), int64(j+1)<<40)
			case 1:
				mems[j].m.ext = makeExt(nil, "", 12345) // an expiry alone
			}
		}
		out.colls[i].mems = mems
	}
	return out
}

// withIndexed returns cp with indexed attribute fields declared in every
// collection (what version 5 added).
func withIndexed(cp checkpoint) checkpoint {
	out := cp
	out.colls = append([]ckptCollection(nil), cp.colls...)
	for i := range out.colls {
		out.colls[i].cfg.Indexed = []string{"kind", "tenant"}
	}
	return out
}

// encodeCheckpoint encodes cp in the current version, in memory.
func encodeCheckpoint(cp checkpoint) []byte { return encodeCheckpointVersion(cp, ckptVersion) }

// encodeCheckpointVersion encodes cp in version 3 or 4, as the writer
// writes them.
func encodeCheckpointVersion(cp checkpoint, version uint32) []byte {
	var buf bytes.Buffer
	cw := newCkptWriter(&buf)
	cw.version = version
	cw.header(cp.kind, cp.chainID, cp.seq, cp.walLSN, cp.nextUID, len(cp.colls))
	for _, c := range cp.colls {
		cw.beginCollection(c.uid, c.name, c.cfg)
		cw.tombstones(c.tombs)
		// Feed memories in uneven pieces, as the chunked copy does.
		for rest := c.mems; len(rest) > 0; {
			n := min(len(rest), 1+len(rest)/3)
			cw.memories(rest[:n])
			rest = rest[n:]
		}
		cw.endCollection(c.nrows, c.paySize, c.nextID, c.sections)
	}
	if err := cw.finish(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// encodeCheckpointOld encodes cp in version 1 or 2, which memrl still
// reads. They share the header and each collection's name and config;
// version 2 has the memories in one batch before the sizes, version 1 the
// sizes and a memory count before the memories.
func encodeCheckpointOld(cp checkpoint, version uint32) []byte {
	b := []byte(ckptMagic)
	b = le.AppendUint32(b, version)
	b = le.AppendUint64(b, cp.walLSN)
	b = le.AppendUint64(b, cp.nextUID)
	b = le.AppendUint32(b, uint32(len(cp.colls)))
	for _, c := range cp.colls {
		b = le.AppendUint64(b, c.uid)
		b = le.AppendUint16(b, uint16(len(c.name)))
		b = append(b, c.name...)
		b = encodeConfig(b, c.cfg)
		sizes := func(b []byte) []byte {
			b = le.AppendUint32(b, c.nrows)
			b = le.AppendUint64(b, c.paySize)
			return le.AppendUint64(b, c.nextID)
		}
		if version == 1 {
			b = sizes(b)
			b = le.AppendUint64(b, uint64(len(c.mems)))
		} else if len(c.mems) > 0 {
			b = le.AppendUint32(b, uint32(len(c.mems)))
		}
		for _, m := range c.mems {
			b = appendCkptMemoryV3(b, m)
		}
		if version == 2 {
			b = sizes(le.AppendUint32(b, 0))
		}
	}
	return le.AppendUint64(b, xxhash.Sum64(b))
}

// resum replaces b's trailing checksum with a correct one, so that a test
// can reach the checks behind it.
func resum(b []byte) []byte {
	body := b[:len(b)-8]
	return le.AppendUint64(append([]byte(nil), body...), xxhash.Sum64(body))
}

func TestCheckpointRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, sizes := range [][]int{nil, {0}, {1}, {3, 0, 7}, {ckptMaxBatch + 5, 2}} {
		cp := randomCheckpoint(rng, sizes...)
		delta := cp
		delta.kind, delta.chainID, delta.seq = ckptDelta, 77, 3
		delta.colls = append([]ckptCollection(nil), cp.colls...)
		for i := range delta.colls {
			delta.colls[i].tombs = []uint64{uint64(i), 1 << 40}
		}
		if got, err := decodeCheckpoint(encodeCheckpoint(delta)); err != nil || !reflect.DeepEqual(got, delta) {
			t.Fatalf("sizes %v, delta: %v", sizes, err)
		}
		for _, x := range []checkpoint{withExt(cp), withExt(delta)} {
			if got, err := decodeCheckpoint(encodeCheckpoint(x)); err != nil || !reflect.DeepEqual(got, x) {
				t.Fatalf("sizes %v, version 4 with attributes, keys and expiry: %v", sizes, err)
			}
		}
		// Version 3 drops them: decoded, the memories have none.
		if got, err := decodeCheckpoint(encodeCheckpointVersion(withExt(delta), 3)); err != nil || !reflect.DeepEqual(got, delta) {
			t.Fatalf("sizes %v, version 3 delta: %v", sizes, err)
		}
		if slices.ContainsFunc(cp.colls, func(c ckptCollection) bool { return len(c.mems) > ckptMaxBatch }) {
			continue // version 2 was written in batches; its helper writes one
		}
		for version, b := range map[int][]byte{4: encodeCheckpoint(cp), 3: encodeCheckpointVersion(cp, 3), 2: encodeCheckpointOld(cp, 2), 1: encodeCheckpointOld(cp, 1)} {
			got, err := decodeCheckpoint(b)
			if err != nil {
				t.Fatalf("sizes %v, version %d: %v", sizes, version, err)
			}
			if !reflect.DeepEqual(got, cp) {
				t.Fatalf("sizes %v, version %d: decoded checkpoint differs", sizes, version)
			}
		}
	}
}

// TestCheckpointCorruption flips every byte, truncates at every length,
// and forges well-checksummed files with bad contents: each is refused
// with ErrCorruptCheckpoint, never loaded.
func TestCheckpointCorruption(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	b := encodeCheckpoint(withExt(randomCheckpoint(rng, 3, 2))) // attributes, keys and expiry too
	refuse := func(what string, bad []byte) {
		t.Helper()
		if _, err := decodeCheckpoint(bad); !errors.Is(err, ErrCorruptCheckpoint) {
			t.Fatalf("%s: %v, want ErrCorruptCheckpoint", what, err)
		}
	}
	for i := range b {
		bad := append([]byte(nil), b...)
		bad[i] ^= 1 << uint(rng.Intn(8))
		refuse("flipped byte", bad)
	}
	for n := 0; n < len(b); n++ {
		refuse("truncated", b[:n])
	}
	refuse("extra byte", resum(append(append([]byte(nil), b[:len(b)-8]...), 0, 0, 0, 0, 0, 0, 0, 0, 0)))

	version := append([]byte(nil), b...)
	le.PutUint32(version[len(ckptMagic):], ckptVersion+1)
	refuse("unknown version", resum(version))

	cp := randomCheckpoint(rng, 2)
	cp.colls[0].mems[1].m.row = cp.colls[0].nrows
	refuse("row past the vector file", encodeCheckpoint(cp))
	cp = randomCheckpoint(rng, 2)
	cp.colls[0].mems[0].m.payOff = cp.colls[0].paySize
	cp.colls[0].mems[0].m.payLen = 1
	refuse("payload past the payload file", encodeCheckpoint(cp))

	delta := randomCheckpoint(rng, 1)
	delta.kind = ckptDelta
	refuse("delta with sequence number 0", encodeCheckpoint(delta))
	full := randomCheckpoint(rng, 1)
	full.seq = 2
	refuse("full checkpoint with a sequence number", encodeCheckpoint(full))

	// A batch count larger than the limit (or than the file) is refused
	// before anything is allocated for it.
	one := encodeCheckpoint(randomCheckpoint(rng, 1))
	at := bytes.Index(one, []byte{1, 0, 'c'}) + 3 // the batches follow name and config
	at += len(encodeConfig(nil, NewConfig(4)))
	if one[at] != 0 {
		t.Fatalf("empty list of indexed fields not found at %d", at)
	}
	at++
	if le.Uint32(one[at:]) != 0 {
		t.Fatalf("tombstone terminator not found at %d", at)
	}
	at += 4
	if le.Uint32(one[at:]) != 1 {
		t.Fatalf("batch count not found at %d", at)
	}
	le.PutUint32(one[at:], ckptMaxBatch+1)
	refuse("oversized batch", resum(one))

	// A version-4 memory's key or attributes claiming more bytes than the
	// file holds.
	ext := encodeCheckpoint(withExt(randomCheckpoint(rng, 1)))
	keyAt := at + 4 + ckptMemSize + 8 // batch count, the first 72 bytes, expires
	if int(le.Uint16(ext[keyAt:])) != len("key-0") {
		t.Fatalf("key length not found at %d", keyAt)
	}
	longKey := append([]byte(nil), ext...)
	le.PutUint16(longKey[keyAt:], 0xffff)
	refuse("key past the end", resum(longKey))
	longAttrs := append([]byte(nil), ext...)
	le.PutUint32(longAttrs[keyAt+2+len("key-0"):], 0xfffffff0)
	before := allocatedBytes()
	refuse("attributes past the end", resum(longAttrs))
	if used := allocatedBytes() - before; used > 1<<20 {
		t.Errorf("refusing attributes of 4 GiB allocated %d bytes", used)
	}

	// A version-5 list of indexed fields that Create could not have made:
	// unsorted, repeated, an invalid name, or running past the file.
	idx := encodeCheckpoint(withIndexed(randomCheckpoint(rng, 1)))
	listAt := bytes.Index(idx, []byte{1, 0, 'c'}) + 3 + len(encodeConfig(nil, NewConfig(4)))
	if idx[listAt] != 2 || string(idx[listAt+2:listAt+6]) != "kind" {
		t.Fatalf("indexed fields not found at %d", listAt)
	}
	swap := append([]byte(nil), idx...)
	copy(swap[listAt+1:], "\x06tenant\x04kind")
	refuse("unsorted indexed fields", resum(swap))
	bad := append([]byte(nil), idx...)
	bad[listAt+2] = ' '
	refuse("invalid indexed field name", resum(bad))
	long := append([]byte(nil), idx...)
	long[listAt+1] = 0xff
	refuse("indexed field name past the end", resum(long))
}

// TestOpenRefusesCorruptCheckpoint corrupts a database's CHECKPOINT file
// on disk: Open fails, names the file, and changes nothing.
func TestOpenRefusesCorruptCheckpoint(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, Options{Logf: func(string, ...any) {}})
	if err != nil {
		t.Fatal(err)
	}
	c := mustColl(t, db, "k", NewConfig(2))
	if _, err := c.Add(AddRequest{Vector: []float32{1, 2}, ID: 1, HasID: true}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, ckptName)
	good, err := vfs.ReadFile(vfs.Default, path)
	if err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), good...)
	bad[len(bad)/2] ^= 0x40
	if err := vfs.WriteFileAtomic(vfs.Default, path, bad); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{Logf: func(string, ...any) {}}); !errors.Is(err, ErrCorruptCheckpoint) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Open with a corrupt checkpoint: %v", err)
	}
	if now, _ := vfs.ReadFile(vfs.Default, path); !bytes.Equal(now, bad) {
		t.Fatal("Open changed the corrupt checkpoint")
	}
	// Restored, it opens with the memory in place.
	if err := vfs.WriteFileAtomic(vfs.Default, path, good); err != nil {
		t.Fatal(err)
	}
	db, err = Open(dir, Options{Logf: func(string, ...any) {}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, _ = db.Collection("k")
	if _, err := c.Get(1); err != nil {
		t.Fatal(err)
	}
}
