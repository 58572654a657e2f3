package sumfile

import (
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
)

func TestHeaderRoundTrip(t *testing.T) {
	for _, h := range []Header{{Dim: 1}, {Dim: 128, LegacyPayloadEnd: 4096}, {Dim: 1 << 16, LegacyPayloadEnd: ^uint64(0)}} {
		b := EncodeHeader(h)
		if len(b) != HeaderSize {
			t.Fatalf("header of %d bytes, want %d", len(b), HeaderSize)
		}
		got, err := DecodeHeader(append(b, 1, 2, 3)) // row checksums follow
		if err != nil || got != h {
			t.Fatalf("DecodeHeader = %+v, %v; want %+v", got, err, h)
		}
	}
}

// TestHeaderCorruptionRefused flips every bit of a header, cuts it short
// at every length, and rewrites its version with a valid checksum: each
// is refused.
func TestHeaderCorruptionRefused(t *testing.T) {
	good := EncodeHeader(Header{Dim: 64, LegacyPayloadEnd: 77})
	for i := range good {
		for bit := range 8 {
			b := append([]byte(nil), good...)
			b[i] ^= 1 << bit
			if h, err := DecodeHeader(b); err == nil {
				t.Fatalf("byte %d bit %d flipped: decoded %+v", i, bit, h)
			}
		}
	}
	for n := range HeaderSize {
		if _, err := DecodeHeader(good[:n]); err == nil || !strings.Contains(err.Error(), "want 32") {
			t.Fatalf("header cut to %d bytes: err %v", n, err)
		}
	}
	b := append([]byte(nil), good...)
	le.PutUint32(b[8:12], Version+1)
	le.PutUint64(b[24:32], xxhash.Sum64(b[:24]))
	if _, err := DecodeHeader(b); err == nil || !strings.Contains(err.Error(), "format version 2") {
		t.Fatalf("newer version: err %v", err)
	}
	b = append([]byte(nil), good...)
	copy(b, "MRLVSUMX")
	le.PutUint64(b[24:32], xxhash.Sum64(b[:24]))
	if _, err := DecodeHeader(b); err == nil || !strings.Contains(err.Error(), "not a vector checksum file") {
		t.Fatalf("foreign magic: err %v", err)
	}
}

// TestSumsBindPlace: a row's checksum changes with its row number and any
// bit of its bytes; a payload's with its id, its offset and any bit.
func TestSumsBindPlace(t *testing.T) {
	row := []float32{1, 2, 3, 4}
	s := RowSum(5, row)
	if RowSum(6, row) == s {
		t.Fatal("row checksum does not depend on the row number")
	}
	for i := range row {
		r := append([]float32(nil), row...)
		r[i] = -r[i]
		if RowSum(5, r) == s {
			t.Fatalf("component %d changed, checksum did not", i)
		}
	}
	p := []byte("payload")
	ps := PayloadSum(1, 100, p)
	if PayloadSum(2, 100, p) == ps || PayloadSum(1, 101, p) == ps || PayloadSum(1, 100, []byte("payloaD")) == ps {
		t.Fatal("payload checksum does not bind id, offset and bytes")
	}
	if Offset(0) != HeaderSize || Offset(3) != HeaderSize+24 {
		t.Fatalf("Offset(0), Offset(3) = %d, %d", Offset(0), Offset(3))
	}
}
