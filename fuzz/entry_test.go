package fuzz

import (
	"bytes"
	"errors"
	"testing"

	"github.com/memrl/memrl/replica"
)

// FuzzDecodeEntry decodes arbitrary bytes as a replica's raft log entry
// (replica.DecodeEntry). Checks: no panic; a refusal wraps
// replica.ErrBadEntry; an accepted entry has 1..MaxEntryArgs arguments and
// encodes back to exactly the input (the encoding is canonical, so a
// damaged entry cannot decode as a different command).
func FuzzDecodeEntry(f *testing.F) {
	for _, e := range []replica.Entry{
		{At: 1, Cmd: [][]byte{[]byte("PING")}},
		{At: 1764567890123456789, Cmd: [][]byte{[]byte("MEM.ADD"), []byte("k"), []byte("VALUES"), []byte("2"), []byte("1"), []byte("0"), []byte("PAYLOAD"), {0, 1, 2, 255}}},
		{At: -5, Cmd: [][]byte{[]byte("EXEC"), []byte("2"), []byte("MEM.DEL"), []byte("k"), []byte("1"), []byte("PING")}},
		{Cmd: [][]byte{{}}},
	} {
		b := replica.EncodeEntry(e)
		f.Add(b)
		f.Add(b[:len(b)-1])
		d := bytes.Clone(b)
		d[len(d)/2] ^= 0x40
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := replica.DecodeEntry(b)
		if err != nil {
			if !errors.Is(err, replica.ErrBadEntry) {
				t.Fatalf("refusal %v does not wrap ErrBadEntry", err)
			}
			return
		}
		if len(e.Cmd) < 1 || len(e.Cmd) > replica.MaxEntryArgs {
			t.Fatalf("%d arguments accepted", len(e.Cmd))
		}
		if again := replica.EncodeEntry(e); !bytes.Equal(again, b) {
			t.Fatalf("decoded %+v re-encodes to %x, input %x", e, again, b)
		}
	})
}
