package snapfile

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzDecodeSnapFile decodes arbitrary bytes as snapshot 2 of collection
// 3, as the engine's Open and MEM.ROLLBACK do. Invariants: no panic; a
// refusal wraps ErrDamaged; an accepted file re-encodes to exactly its
// bytes.
func FuzzDecodeSnapFile(f *testing.F) {
	f.Add(Encode(File{UID: 3, Seq: 2, Created: 1e18, Name: "s"}))
	f.Add(Encode(sampleFile()))
	f.Fuzz(func(t *testing.T, b []byte) {
		sf, err := Decode(b, 3, 2)
		if err != nil {
			if !errors.Is(err, ErrDamaged) {
				t.Fatalf("error %v does not wrap ErrDamaged", err)
			}
			return
		}
		if enc := Encode(sf); !bytes.Equal(enc, b) {
			t.Fatalf("file %x re-encodes as %x", b, enc)
		}
	})
}
