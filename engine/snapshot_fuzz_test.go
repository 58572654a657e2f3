package engine

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzDecodeSnapFile decodes arbitrary bytes as snapshot 2 of collection
// 3, as Open and MEM.ROLLBACK do. Invariants: no panic; a refusal wraps
// errSnapshotDamaged; an accepted file re-encodes to exactly its bytes.
func FuzzDecodeSnapFile(f *testing.F) {
	f.Add(encodeSnapFile(snapFile{uid: 3, seq: 2, created: 1e18, name: "s"}))
	f.Add(encodeSnapFile(snapFile{uid: 3, seq: 2, created: 1e18, name: "good point", entries: []snapEntry{
		{id: 1, q: 0.5, visits: 2, lastReward: 1, rewardSum: 1.5, updated: 1e18},
		{id: 7, q: -1, expires: 2e18, key: "k7", attrs: []byte(`{"g":1}`)},
	}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		sf, err := decodeSnapFile(b, 3, 2)
		if err != nil {
			if !errors.Is(err, errSnapshotDamaged) {
				t.Fatalf("error %v does not wrap errSnapshotDamaged", err)
			}
			return
		}
		if enc := encodeSnapFile(sf); !bytes.Equal(enc, b) {
			t.Fatalf("file %x re-encodes as %x", b, enc)
		}
	})
}
