package replica

import (
	"bytes"
	"errors"
	"testing"
)

// TestBatchRoundTripAndDamage: a batch entry decodes to the commands
// encoded, in order; any changed byte, cut or extension is refused with
// ErrBadEntry; an empty batch is refused.
func TestBatchRoundTripAndDamage(t *testing.T) {
	in := Batch{At: 1764567890123456789, Cmds: [][][]byte{
		{[]byte("MEM.ADD"), []byte("k"), []byte("VALUES"), []byte("1"), []byte("0.5")},
		{[]byte("EXEC"), []byte("2"), []byte("MEM.DEL"), []byte("k")},
		{[]byte("MEM.REWARD"), {}, {0, 255, 13, 10}},
	}}
	b := EncodeBatch(in)
	got, err := DecodeBatch(b)
	if err != nil || got.At != in.At || len(got.Cmds) != len(in.Cmds) {
		t.Fatalf("DecodeBatch = %+v, %v", got, err)
	}
	for i, c := range in.Cmds {
		if len(got.Cmds[i]) != len(c) {
			t.Fatalf("command %d: %q, want %q", i, got.Cmds[i], c)
		}
		for j := range c {
			if !bytes.Equal(got.Cmds[i][j], c[j]) {
				t.Fatalf("command %d argument %d: %q, want %q", i, j, got.Cmds[i][j], c[j])
			}
		}
	}
	for i := range b {
		d := bytes.Clone(b)
		d[i] ^= 0x10
		if _, err := DecodeBatch(d); !errors.Is(err, ErrBadEntry) {
			t.Fatalf("byte %d changed: %v", i, err)
		}
		if _, _, err := decodeLog(d); !errors.Is(err, ErrBadEntry) {
			t.Fatalf("decodeLog, byte %d changed: %v", i, err)
		}
	}
	for n := 0; n < len(b); n++ {
		if _, err := DecodeBatch(b[:n]); !errors.Is(err, ErrBadEntry) {
			t.Fatalf("cut to %d bytes: %v", n, err)
		}
	}
	if _, err := DecodeBatch(append(bytes.Clone(b), 0)); !errors.Is(err, ErrBadEntry) {
		t.Fatalf("extended: %v", err)
	}
	if _, err := DecodeBatch(EncodeBatch(Batch{At: 1})); !errors.Is(err, ErrBadEntry) {
		t.Fatalf("a batch without a command: %v", err)
	}
	if _, err := DecodeBatch(EncodeBatch(Batch{At: 1, Cmds: [][][]byte{{}}})); !errors.Is(err, ErrBadEntry) {
		t.Fatalf("a batch holding an empty command: %v", err)
	}
}

// TestDecodeLogBothVersions: the state machine reads a version-1 entry
// (written before batching) as one command whose reply is single, and a
// batch as its commands.
func TestDecodeLogBothVersions(t *testing.T) {
	cmd := [][]byte{[]byte("MEM.CREATE"), []byte("k"), []byte("DIM"), []byte("2")}
	b, single, err := decodeLog(EncodeEntry(Entry{At: 7, Cmd: cmd}))
	if err != nil || !single || b.At != 7 || len(b.Cmds) != 1 || len(b.Cmds[0]) != 4 || string(b.Cmds[0][1]) != "k" {
		t.Fatalf("version 1: %+v single=%v %v", b, single, err)
	}
	b, single, err = decodeLog(EncodeBatch(Batch{At: 8, Cmds: [][][]byte{cmd, cmd}}))
	if err != nil || single || b.At != 8 || len(b.Cmds) != 2 {
		t.Fatalf("version 2: %+v single=%v %v", b, single, err)
	}
	if _, _, err := decodeLog([]byte{3, 0, 0}); !errors.Is(err, ErrBadEntry) {
		t.Fatalf("an unknown version: %v", err)
	}
}
