package fuzz

import (
	"bytes"
	"errors"
	"testing"

	"github.com/memrl/memrl/replica"
)

// FuzzDecodeBatch decodes arbitrary bytes as a batch entry of a replica's
// raft log (replica.DecodeBatch, version 2). Checks: no panic; a refusal
// wraps replica.ErrBadEntry; an accepted batch has 1..MaxBatchCmds
// commands of at least one argument each and encodes back to exactly the
// input.
func FuzzDecodeBatch(f *testing.F) {
	for _, b := range []replica.Batch{
		{At: 1, Cmds: [][][]byte{{[]byte("PING")}}},
		{At: 1764567890123456789, Cmds: [][][]byte{
			{[]byte("MEM.ADD"), []byte("k"), []byte("VALUES"), []byte("2"), []byte("1"), []byte("0"), []byte("PAYLOAD"), {0, 1, 2, 255}},
			{[]byte("EXEC"), []byte("2"), []byte("MEM.DEL"), []byte("k"), []byte("1"), []byte("PING")},
			{{}},
		}},
	} {
		e := replica.EncodeBatch(b)
		f.Add(e)
		f.Add(e[:len(e)-1])
		d := bytes.Clone(e)
		d[len(d)/2] ^= 0x40
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		b, err := replica.DecodeBatch(in)
		if err != nil {
			if !errors.Is(err, replica.ErrBadEntry) {
				t.Fatalf("refusal %v does not wrap ErrBadEntry", err)
			}
			return
		}
		if len(b.Cmds) < 1 || len(b.Cmds) > replica.MaxBatchCmds {
			t.Fatalf("%d commands accepted", len(b.Cmds))
		}
		for i, c := range b.Cmds {
			if len(c) < 1 {
				t.Fatalf("command %d has no arguments", i)
			}
		}
		if again := replica.EncodeBatch(b); !bytes.Equal(again, in) {
			t.Fatalf("decoded %+v re-encodes to %x, input %x", b, again, in)
		}
	})
}
