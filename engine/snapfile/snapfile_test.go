package snapfile

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
)

// sampleFile is snapshot 2 of collection 3 with two entries, one with a
// key, attributes and an expiry.
func sampleFile() File {
	return File{UID: 3, Seq: 2, Created: 1e18, Name: "good point", Entries: []Entry{
		{ID: 1, Q: 0.5, Visits: 2, LastReward: 1, RewardSum: 1.5, Updated: 1e18},
		{ID: 7, Q: -1, Expires: 2e18, Key: "k7", Attrs: []byte(`{"g":1}`)},
	}}
}

func TestRoundTrip(t *testing.T) {
	for _, f := range []File{{UID: 3, Seq: 2, Name: "empty", Entries: []Entry{}}, sampleFile()} {
		got, err := Decode(Encode(f), f.UID, f.Seq)
		if err != nil || !reflect.DeepEqual(got, f) {
			t.Fatalf("Decode(Encode(%+v)) = %+v, %v", f, got, err)
		}
	}
}

// reseal rewrites b's trailing checksum, so that the decoder behind it is
// reached.
func reseal(b []byte) []byte {
	le.PutUint64(b[len(b)-8:], xxhash.Sum64(b[:len(b)-8]))
	return b
}

// TestDamageRefused: every bit flipped, every length cut short, another
// version, another collection or sequence number, entries out of order,
// bytes past the entries: each is refused with ErrDamaged.
func TestDamageRefused(t *testing.T) {
	good := Encode(sampleFile())
	refused := func(what string, b []byte, want string) {
		t.Helper()
		_, err := Decode(b, 3, 2)
		if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: err %v, want ErrDamaged with %q", what, err, want)
		}
	}
	for i := range good {
		for bit := range 8 {
			b := append([]byte(nil), good...)
			b[i] ^= 1 << bit
			if _, err := Decode(b, 3, 2); !errors.Is(err, ErrDamaged) {
				t.Fatalf("byte %d bit %d flipped: err %v", i, bit, err)
			}
		}
	}
	for n := range len(good) {
		if _, err := Decode(good[:n], 3, 2); !errors.Is(err, ErrDamaged) {
			t.Fatalf("cut to %d bytes: err %v", n, err)
		}
	}
	b := append([]byte(nil), good...)
	le.PutUint32(b[8:12], Version+1)
	refused("newer version", reseal(b), "version 2, this build reads 1")
	if _, err := Decode(good, 4, 2); err == nil || !strings.Contains(err.Error(), "want 2 of 4") {
		t.Fatalf("another collection: err %v", err)
	}
	if _, err := Decode(good, 3, 1); err == nil || !strings.Contains(err.Error(), "want 1 of 3") {
		t.Fatalf("another sequence number: err %v", err)
	}
	f := sampleFile()
	f.Entries[1].ID = 1
	refused("a repeated id", Encode(f), "ids out of order at entry 1")
	b = append(append([]byte(nil), good[:len(good)-8]...), 0) // a byte before the checksum
	refused("a byte past the entries", le.AppendUint64(b, xxhash.Sum64(b)), "1 bytes past the entries")
	f = sampleFile()
	b = Encode(f)
	le.PutUint64(b[8+4+8+8+8+2+len(f.Name):], 1<<40) // the count
	refused("a count past the file", reseal(b), "bad header")
}

// TestEntryRestShort: DecodeEntryRest on a cut entry reports it short and
// reads nothing more once short.
func TestEntryRestShort(t *testing.T) {
	full := AppendEntry(nil, sampleFile().Entries[1])
	for n := 8; n < len(full); n++ {
		var e Entry
		short := false
		DecodeEntryRest(full[8:n], &e, &short)
		if !short {
			t.Fatalf("entry cut to %d bytes decoded as %+v", n, e)
		}
	}
	var e Entry
	short := false
	if rest := DecodeEntryRest(append(full[8:], 9), &e, &short); short || len(rest) != 1 || e.Key != "k7" {
		t.Fatalf("whole entry: short %v, rest %v, %+v", short, rest, e)
	}
	short = true
	if rest := DecodeEntryRest(full[8:], &e, &short); len(rest) != len(full)-8 {
		t.Fatalf("read %d bytes after a short read", len(full)-8-len(rest))
	}
}
