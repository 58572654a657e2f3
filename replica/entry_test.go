package replica

import (
	"bytes"
	"errors"
	"testing"
)

// TestEntryRoundTripAndDamage: an entry decodes to what was encoded, and
// any changed byte, cut or extension is refused with ErrBadEntry.
func TestEntryRoundTripAndDamage(t *testing.T) {
	e := Entry{At: 1764567890123456789, Cmd: [][]byte{[]byte("MEM.ADD"), []byte("k"), {}, {0, 255, 13, 10}}}
	b := EncodeEntry(e)
	got, err := DecodeEntry(b)
	if err != nil || got.At != e.At || len(got.Cmd) != len(e.Cmd) {
		t.Fatalf("DecodeEntry = %+v, %v", got, err)
	}
	for i := range e.Cmd {
		if !bytes.Equal(got.Cmd[i], e.Cmd[i]) {
			t.Fatalf("argument %d: %q, want %q", i, got.Cmd[i], e.Cmd[i])
		}
	}
	for i := range b {
		d := bytes.Clone(b)
		d[i] ^= 0x10
		if _, err := DecodeEntry(d); !errors.Is(err, ErrBadEntry) {
			t.Fatalf("byte %d changed: %v", i, err)
		}
	}
	for n := 0; n < len(b); n++ {
		if _, err := DecodeEntry(b[:n]); !errors.Is(err, ErrBadEntry) {
			t.Fatalf("cut to %d bytes: %v", n, err)
		}
	}
	if _, err := DecodeEntry(append(bytes.Clone(b), 0)); !errors.Is(err, ErrBadEntry) {
		t.Fatalf("extended: %v", err)
	}
	// A damaged entry reaches the state machine as an error reply, the
	// same on every replica, and applies nothing.
	if _, err := DecodeEntry(EncodeEntry(Entry{At: 1})); !errors.Is(err, ErrBadEntry) {
		t.Fatalf("an entry without a command: %v", err)
	}
}
