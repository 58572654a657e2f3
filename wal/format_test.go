package wal

import (
	"encoding/binary"
	"testing"

	"github.com/cespare/xxhash/v2"
)

// fixHeaderChecksum recomputes the checksum of an encoded segment header,
// to build headers that verify but say something else.
func fixHeaderChecksum(b []byte) {
	binary.LittleEndian.PutUint64(b[32:40], xxhash.Sum64(b[0:32]))
}

func TestSegmentHeaderRoundTrip(t *testing.T) {
	h := segmentHeader{num: 7, base: 12345}
	got, reason := decodeSegmentHeader(h.encode())
	if reason != "" || got != h {
		t.Fatalf("decode: %+v %q", got, reason)
	}
	for i := 0; i < segmentHeaderSize; i++ {
		b := h.encode()
		b[i] ^= 0x01
		if _, reason := decodeSegmentHeader(b); reason == "" {
			t.Fatalf("flipped header byte %d not detected", i)
		}
	}
}

func TestFrameEveryByteCovered(t *testing.T) {
	for _, n := range []int{0, 1, 7, 8, 9, 100} {
		rec := make([]byte, n)
		for i := range rec {
			rec[i] = byte(i * 7)
		}
		f := appendFrame(nil, 42, rec, payloadDigest(rec))
		if len(f) != frameSize(n) || len(f)%frameAlign != 0 {
			t.Fatalf("frame size %d for %d-byte record", len(f), n)
		}
		h := decodeFrameHeader(f)
		if !h.plausible() || h.lsn != 42 || h.n != n || !h.verify(f, f[recordHeaderSize:recordHeaderSize+n]) {
			t.Fatalf("frame does not verify: %+v", h)
		}
		// Every header and payload byte is covered by the checksum
		// (padding is checked for zeros by the reader instead).
		for i := 0; i < recordHeaderSize+n; i++ {
			g := append([]byte(nil), f...)
			g[i] ^= 0x10
			h := decodeFrameHeader(g)
			if h.plausible() && h.n == n && h.verify(g, g[recordHeaderSize:recordHeaderSize+n]) {
				t.Fatalf("flip of byte %d in a %d-byte record not detected", i, n)
			}
		}
	}
}

func TestSegmentNames(t *testing.T) {
	for _, n := range []uint64{1, 255, 1 << 40} {
		got, ok := parseSegmentName(segmentName(n))
		if !ok || got != n {
			t.Fatalf("segment name round trip %d -> %q -> %d", n, segmentName(n), got)
		}
	}
	for _, bad := range []string{"1.wal", "000000000000000g.wal", "0000000000000001.log", "checkpoint"} {
		if _, ok := parseSegmentName(bad); ok {
			t.Fatalf("%q parsed as a segment", bad)
		}
	}
}
