package engine

import (
	"bytes"
	"errors"
	"math/bits"
	"math/rand"
	"runtime"
	"testing"

	"github.com/memrl/memrl/fuzz/corpus"
)

// checkpointSeeds are real checkpoint files of every version and kind the
// decoder reads: full checkpoints of versions 1 to 4, and deltas of
// versions 3 and 4 with tombstones (version 4's memories with attributes,
// keys and expiry). They are the committed seed corpus of
// FuzzDecodeCheckpoint (TestFuzzSeedsCheckpoint keeps them current).
func checkpointSeeds() map[string]corpus.Seed {
	rng := rand.New(rand.NewSource(14))
	empty := checkpoint{walLSN: 1, nextUID: 1}
	full := randomCheckpoint(rng, 2, 0, 3)
	delta := randomCheckpoint(rng, 1, 2)
	delta.kind, delta.chainID, delta.seq = ckptDelta, 0x5eed, 2
	delta.colls[0].tombs = []uint64{9, 1 << 40}
	delta.colls[1].tombs = []uint64{3}
	return map[string]corpus.Seed{
		"v6-full":     {encodeCheckpoint(withIndexed(withExt(full))), false},
		"v6-delta":    {encodeCheckpoint(withIndexed(withExt(delta))), true},
		"v5-full":     {encodeCheckpointVersion(withIndexed(withExt(full)), 5), false},
		"v5-delta":    {encodeCheckpointVersion(withIndexed(withExt(delta)), 5), true},
		"v4-full":     {encodeCheckpointVersion(withExt(full), 4), false},
		"v4-delta":    {encodeCheckpointVersion(withExt(delta), 4), true},
		"v3-empty":    {encodeCheckpointVersion(empty, 3), false},
		"v3-full":     {encodeCheckpointVersion(full, 3), false},
		"v3-full-fix": {encodeCheckpointVersion(full, 3), true},
		"v3-delta":    {encodeCheckpointVersion(delta, 3), true},
		"v2-full":     {encodeCheckpointOld(full, 2), true},
		"v1-full":     {encodeCheckpointOld(full, 1), true},
		"v1-empty":    {encodeCheckpointOld(empty, 1), false},
	}
}

func TestFuzzSeedsCheckpoint(t *testing.T) {
	seeds := checkpointSeeds()
	for name, s := range seeds {
		if _, err := decodeCheckpoint(s[0].([]byte)); err != nil {
			t.Fatalf("seed %s does not decode: %v", name, err)
		}
	}
	corpus.Check(t, "FuzzDecodeCheckpoint", seeds)
}

// FuzzDecodeCheckpoint feeds arbitrary bytes to decodeCheckpoint. With
// fixSum set the last 8 bytes are replaced by the right checksum first, so
// that the fuzzer reaches the decoder behind the checksum (a file written
// by a buggy encoder has a correct checksum too). Invariants:
//
//   - no panic; every refusal wraps ErrCorruptCheckpoint;
//   - memory allocated stays within a constant plus a small multiple of
//     the input length, whatever the counts in the file declare;
//   - an accepted checkpoint is consistent: kind and sequence number
//     agree, every collection config is valid, and every memory lies within its collection's recorded
//     vector and payload file sizes (without overflow), which is what
//     loading trusts;
//   - an accepted checkpoint re-encoded as version 4 decodes to a
//     checkpoint that encodes to the same bytes.
func FuzzDecodeCheckpoint(f *testing.F) {
	f.Add([]byte("MEMRLCKP"), true)
	f.Fuzz(func(t *testing.T, data []byte, fixSum bool) {
		if fixSum && len(data) >= 8 {
			data = resum(data)
		}
		before := allocatedBytes()
		cp, err := decodeCheckpoint(data)
		if used := allocatedBytes() - before; used > 256<<10+8*uint64(len(data)) {
			t.Fatalf("decoding a %d-byte file allocated %d bytes", len(data), used)
		}
		if err != nil {
			if !errors.Is(err, ErrCorruptCheckpoint) {
				t.Fatalf("error %v does not wrap ErrCorruptCheckpoint", err)
			}
			return
		}
		if cp.kind > ckptDelta || (cp.kind == ckptFull) != (cp.seq == 0) {
			t.Fatalf("accepted kind %d with sequence number %d", cp.kind, cp.seq)
		}
		for _, c := range cp.colls {
			if err := c.cfg.Validate(); err != nil {
				t.Fatalf("accepted collection %q with an invalid config: %v", c.name, err)
			}
			if cp.kind == ckptFull && len(c.tombs) > 0 {
				t.Fatalf("full checkpoint with %d tombstones", len(c.tombs))
			}
			for _, m := range c.mems {
				end, carry := bits.Add64(m.m.payOff, uint64(m.m.payLen), 0)
				if m.m.row >= c.nrows || carry != 0 || end > c.paySize {
					t.Fatalf("accepted memory %d (row %d, payload %d+%d) outside the file sizes (%d rows, %d payload bytes)",
						m.id, m.m.row, m.m.payOff, m.m.payLen, c.nrows, c.paySize)
				}
			}
		}
		enc := encodeCheckpoint(cp)
		again, err := decodeCheckpoint(enc)
		if err != nil {
			t.Fatalf("re-encoded checkpoint refused: %v", err)
		}
		if !bytes.Equal(encodeCheckpoint(again), enc) {
			t.Fatal("re-encoded checkpoint does not round-trip")
		}
	})
}

// allocatedBytes returns the bytes allocated so far by the process
// (runtime.MemStats.TotalAlloc); the difference of two readings bounds
// what the code between them allocated.
func allocatedBytes() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

// TestCheckpointRefusesPayloadRangeOverflow: a memory whose payload offset
// plus length wraps around 2^64 lies past the payload file as surely as
// one that ends past it, in a full checkpoint or after a delta.
func TestCheckpointRefusesPayloadRangeOverflow(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	cp := randomCheckpoint(rng, 2)
	cp.colls[0].mems[1].m.payOff = 1<<64 - 1
	cp.colls[0].mems[1].m.payLen = 2 // ends at 1 after wrapping
	for _, b := range [][]byte{encodeCheckpoint(cp), encodeCheckpointOld(cp, 1), encodeCheckpointOld(cp, 2)} {
		if _, err := decodeCheckpoint(b); !errors.Is(err, ErrCorruptCheckpoint) {
			t.Errorf("version %d: %v, want ErrCorruptCheckpoint", le.Uint32(b[len(ckptMagic):]), err)
		}
	}
	if err := cp.checkBounds(); !errors.Is(err, ErrCorruptCheckpoint) {
		t.Errorf("checkBounds: %v, want ErrCorruptCheckpoint", err)
	}
}

// TestFullCheckpointRefusesTombstones: tombstones belong to deltas (they
// delete what an earlier file of the chain holds); a full checkpoint that
// lists some is damage, not something to ignore.
func TestFullCheckpointRefusesTombstones(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	cp := randomCheckpoint(rng, 2)
	cp.colls[0].tombs = []uint64{7}
	if _, err := decodeCheckpoint(encodeCheckpoint(cp)); !errors.Is(err, ErrCorruptCheckpoint) {
		t.Fatalf("full checkpoint with a tombstone: %v, want ErrCorruptCheckpoint", err)
	}
}
