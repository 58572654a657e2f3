package remapfile

import (
	"errors"
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/cespare/xxhash/v2"
)

func sample() (Map, []byte) {
	m := Map{
		Gen:    3,
		Kept:   []Kept{{ID: 1, OldRow: 0, OldOff: 0, NewOff: 0}, {ID: 4, OldRow: 3, OldOff: 90, NewOff: 30}, {ID: 7, OldRow: 6, OldOff: 200, NewOff: 60}},
		Pinned: map[uint64]Pin{2: {Row: 3, Off: 120}, 5: {Row: 4, Off: 150}},
	}
	return m, Encode(m.Gen, len(m.Kept), slices.Values(m.Kept), len(m.Pinned), maps.All(m.Pinned))
}

// TestRoundTrip: a map decodes to what was encoded, and an empty one too.
func TestRoundTrip(t *testing.T) {
	m, b := sample()
	got, err := Decode(b, m.Gen, xxhash.Sum64(b))
	if err != nil || !reflect.DeepEqual(got, m) {
		t.Fatalf("decoded %+v, %v; want %+v", got, err, m)
	}
	e := Encode(9, 0, slices.Values([]Kept(nil)), 0, maps.All(map[uint64]Pin(nil)))
	got, err = Decode(e, 9, xxhash.Sum64(e))
	if err != nil || got.Gen != 9 || len(got.Kept) != 0 || len(got.Pinned) != 0 {
		t.Fatalf("empty map: %+v, %v", got, err)
	}
}

// TestEveryDamageRefused: every bit flipped, every cut, a byte added, the
// marker's sum of another file: each refused with ErrDamaged, nothing
// guessed.
func TestEveryDamageRefused(t *testing.T) {
	m, good := sample()
	sum := xxhash.Sum64(good)
	for i := range len(good) * 8 {
		b := append([]byte(nil), good...)
		b[i/8] ^= 1 << (i % 8)
		// The marker's sum is the good file's: any flip is caught by it.
		if _, err := Decode(b, m.Gen, sum); !errors.Is(err, ErrDamaged) {
			t.Fatalf("bit %d flipped: %v", i, err)
		}
		// With the sum of the damaged file itself (a marker written for
		// it), the trailer still catches the flip.
		if _, err := Decode(b, m.Gen, xxhash.Sum64(b)); !errors.Is(err, ErrDamaged) {
			t.Fatalf("bit %d flipped, sum of the damaged file: %v", i, err)
		}
	}
	for n := range len(good) {
		if _, err := Decode(good[:n], m.Gen, xxhash.Sum64(good[:n])); !errors.Is(err, ErrDamaged) {
			t.Fatalf("cut to %d bytes: %v", n, err)
		}
	}
	long := append(append([]byte(nil), good...), 0)
	if _, err := Decode(long, m.Gen, xxhash.Sum64(long)); !errors.Is(err, ErrDamaged) {
		t.Fatalf("a byte added: %v", err)
	}
	if _, err := Decode(good, m.Gen, sum+1); !errors.Is(err, ErrDamaged) {
		t.Fatalf("another marker's sum: %v", err)
	}
}

// TestOtherVersionOrGenerationRefused: a file of a newer version, or one
// naming another generation, is refused even with checksums that match.
func TestOtherVersionOrGenerationRefused(t *testing.T) {
	m, good := sample()
	reseal := func(b []byte) []byte {
		body := b[:len(b)-8]
		return le.AppendUint64(append([]byte(nil), body...), xxhash.Sum64(body))
	}
	v2 := append([]byte(nil), good...)
	v2[len(Magic)] = Version + 1
	v2 = reseal(v2)
	if _, err := Decode(v2, m.Gen, xxhash.Sum64(v2)); !errors.Is(err, ErrDamaged) {
		t.Fatalf("version %d: %v", Version+1, err)
	}
	if _, err := Decode(good, m.Gen+1, xxhash.Sum64(good)); !errors.Is(err, ErrDamaged) {
		t.Fatalf("another generation: %v", err)
	}
	// Counts that claim more entries than the file holds.
	big := append([]byte(nil), good...)
	le.PutUint32(big[len(Magic)+1+8:], 1<<31)
	big = reseal(big)
	if _, err := Decode(big, m.Gen, xxhash.Sum64(big)); !errors.Is(err, ErrDamaged) {
		t.Fatalf("counts past the file: %v", err)
	}
}
