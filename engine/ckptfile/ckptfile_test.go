package ckptfile

import (
	"errors"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"

	"github.com/memrl/memrl/engine/record"
)

// file returns a checkpoint of h with body after its header (the
// collections, opaque here) and its checksum.
func file(h Header, body []byte) []byte {
	b := append(AppendHeader(nil, h), body...)
	return le.AppendUint64(b, xxhash.Sum64(b))
}

func TestHeaderRoundTrip(t *testing.T) {
	for v := uint32(1); v <= Version; v++ {
		h := Header{Version: v, WalLSN: 77, NextUID: 5, NColl: 2}
		if v >= 3 {
			h.Kind, h.ChainID, h.Seq = KindDelta, 0xabc, 3
		}
		body, err := Verify(file(h, []byte("collections")))
		if err != nil {
			t.Fatalf("version %d: %v", v, err)
		}
		d := &record.Decoder{B: body[len(Magic):]}
		got, err := DecodeHeader(d)
		if err != nil || got != h || string(d.B) != "collections" {
			t.Fatalf("version %d: decoded %+v, %v, rest %q; want %+v", v, got, err, d.B, h)
		}
	}
}

// TestFrameDamageRefused: every bit of a file flipped, every length cut
// short, another magic: Verify refuses each with ErrCorrupt.
func TestFrameDamageRefused(t *testing.T) {
	good := file(Header{Version: Version, Kind: KindFull, ChainID: 9, WalLSN: 1, NextUID: 2}, []byte{1, 2, 3})
	for i := range good {
		for bit := range 8 {
			b := append([]byte(nil), good...)
			b[i] ^= 1 << bit
			if _, err := Verify(b); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("byte %d bit %d flipped: err %v", i, bit, err)
			}
		}
	}
	for n := range len(good) {
		if _, err := Verify(good[:n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("cut to %d bytes: err %v", n, err)
		}
	}
}

// TestHeaderRefusals: a version this build does not read, a kind other
// than full or delta, a full checkpoint with a sequence number and a
// delta without one are refused with ErrCorrupt.
func TestHeaderRefusals(t *testing.T) {
	for _, c := range []struct {
		h    Header
		want string
	}{
		{Header{Version: Version + 1}, "version 7, this build reads 1 to 6"},
		{Header{Version: Version, Kind: 2, Seq: 1}, "kind 2 with sequence number 1"},
		{Header{Version: Version, Kind: KindFull, Seq: 1}, "kind 0 with sequence number 1"},
		{Header{Version: Version, Kind: KindDelta, Seq: 0}, "kind 1 with sequence number 0"},
	} {
		b := AppendHeader(nil, c.h)
		if c.h.Version > Version {
			le.PutUint32(b[len(Magic):], c.h.Version) // AppendHeader writes what it is given
		}
		_, err := DecodeHeader(&record.Decoder{B: b[len(Magic):]})
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%+v: err %v, want %q", c.h, err, c.want)
		}
	}
	if _, err := DecodeHeader(&record.Decoder{B: []byte{0, 0, 0, 0}}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("version 0: err %v", err)
	}
	d := &record.Decoder{B: AppendHeader(nil, Header{Version: Version, Kind: KindDelta, Seq: 1})[len(Magic) : len(Magic)+10]}
	if _, err := DecodeHeader(d); err != nil || !d.Err {
		t.Fatalf("a header cut short: err %v, short %v (the caller's Done reports it)", err, d.Err)
	}
}

// TestSections: sections round-trip in both framings; an unknown tag and
// a tag twice are refused; a cut list leaves d.Err for the caller.
func TestSections(t *testing.T) {
	s := []Section{{Tag: 1, Data: []byte("one")}, {Tag: 3, Data: nil}, {Tag: 200, Data: []byte{0}}}
	known := func(t uint16) bool { return t == 1 || t == 3 || t == 200 }
	for _, mem := range []bool{false, true} {
		d := &record.Decoder{B: AppendCollSections(nil, s)}
		n, tag := int(d.U16()), d.U16
		if mem {
			d = &record.Decoder{B: AppendMemSections(nil, s)}
			n, tag = int(d.U8()), func() uint16 { return uint16(d.U8()) }
		}
		got, err := DecodeSections(d, n, tag, known)
		if err != nil || len(d.B) != 0 || len(got) != 3 || string(got[0].Data) != "one" || got[2].Tag != 200 || len(got[1].Data) != 0 {
			t.Fatalf("mem %v: %+v, %v, %d bytes left", mem, got, err, len(d.B))
		}
	}
	b := AppendCollSections(nil, s)
	d := &record.Decoder{B: b[2:]}
	if _, err := DecodeSections(d, 3, d.U16, func(t uint16) bool { return t != 3 }); err == nil || !strings.Contains(err.Error(), "unknown section tag 3") {
		t.Fatalf("unknown tag: err %v", err)
	}
	b = AppendCollSections(nil, []Section{{Tag: 1}, {Tag: 1}})
	d = &record.Decoder{B: b[2:]}
	if _, err := DecodeSections(d, 2, d.U16, known); err == nil || !strings.Contains(err.Error(), "section tag 1 twice") {
		t.Fatalf("a tag twice: err %v", err)
	}
	b = AppendCollSections(nil, s)
	d = &record.Decoder{B: b[2 : len(b)-1]}
	if got, err := DecodeSections(d, 3, d.U16, known); err != nil || got != nil || !d.Err {
		t.Fatalf("cut short: %+v, %v, short %v", got, err, d.Err)
	}
}
