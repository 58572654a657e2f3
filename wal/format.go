package wal

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"
)

// The byte layouts are drawn in doc.go; the constants here are their
// single source of truth. All integers are little-endian.
const (
	// segmentMagic starts every segment file.
	segmentMagic = "MEMRLWAL"
	// formatVersion is the segment format version this package writes
	// and the only one it reads.
	formatVersion = 1
	// segmentHeaderSize is the size of a segment header.
	segmentHeaderSize = 40
	// recordHeaderSize is the size of a record frame's header.
	recordHeaderSize = 24
	// frameAlign is the alignment of every record frame within a
	// segment (segmentHeaderSize is a multiple of it).
	frameAlign = 8
	// segmentSuffix ends every segment file name.
	segmentSuffix = ".wal"
)

// MaxRecordSize is the largest record Append accepts. Larger records are
// refused with ErrRecordTooLarge; the limit also lets recovery reject an
// implausible length field without reading it.
const MaxRecordSize = 64 << 20

// segmentHeader is the decoded header of a segment file.
type segmentHeader struct {
	num  uint64 // segment number; equals the number in the file name
	base LSN    // LSN of the segment's first record (or of the next record, if empty)
}

func (h segmentHeader) encode() []byte {
	b := make([]byte, segmentHeaderSize)
	copy(b[0:8], segmentMagic)
	binary.LittleEndian.PutUint32(b[8:12], formatVersion)
	binary.LittleEndian.PutUint32(b[12:16], 0) // flags, reserved
	binary.LittleEndian.PutUint64(b[16:24], h.num)
	binary.LittleEndian.PutUint64(b[24:32], uint64(h.base))
	binary.LittleEndian.PutUint64(b[32:40], xxhash.Sum64(b[0:32]))
	return b
}

// decodeSegmentHeader parses b (segmentHeaderSize bytes), returning a
// reason string if it is not a valid header.
func decodeSegmentHeader(b []byte) (segmentHeader, string) {
	if len(b) < segmentHeaderSize {
		return segmentHeader{}, "short segment header"
	}
	if got, want := binary.LittleEndian.Uint64(b[32:40]), xxhash.Sum64(b[0:32]); got != want {
		return segmentHeader{}, fmt.Sprintf("segment header checksum mismatch (stored %#x, computed %#x)", got, want)
	}
	if string(b[0:8]) != segmentMagic {
		return segmentHeader{}, fmt.Sprintf("bad segment magic %q", b[0:8])
	}
	if v := binary.LittleEndian.Uint32(b[8:12]); v != formatVersion {
		return segmentHeader{}, fmt.Sprintf("unsupported segment format version %d (want %d)", v, formatVersion)
	}
	if f := binary.LittleEndian.Uint32(b[12:16]); f != 0 {
		return segmentHeader{}, fmt.Sprintf("unknown segment flags %#x", f)
	}
	return segmentHeader{
		num:  binary.LittleEndian.Uint64(b[16:24]),
		base: LSN(binary.LittleEndian.Uint64(b[24:32])),
	}, ""
}

// frameSize is the size of the frame holding an n-byte record.
func frameSize(n int) int {
	return (recordHeaderSize + n + frameAlign - 1) &^ (frameAlign - 1)
}

// payloadDigest hashes a record's payload. It is the part of the frame
// checksum that does not depend on the LSN, so Append computes it before
// taking the log's lock.
func payloadDigest(rec []byte) xxhash.Digest {
	var d xxhash.Digest
	d.Reset()
	d.Write(rec)
	return d
}

// appendFrame appends the frame of rec, with the given lsn, to dst. d
// must be payloadDigest(rec).
func appendFrame(dst []byte, lsn LSN, rec []byte, d xxhash.Digest) []byte {
	start := len(dst)
	size := frameSize(len(rec))
	dst = append(dst, make([]byte, size)...) // zeroed: padding is zero
	f := dst[start : start+size]
	binary.LittleEndian.PutUint32(f[8:12], uint32(len(rec)))
	binary.LittleEndian.PutUint32(f[12:16], 0) // flags, reserved
	binary.LittleEndian.PutUint64(f[16:24], uint64(lsn))
	d.Write(f[8:24])
	binary.LittleEndian.PutUint64(f[0:8], d.Sum64())
	copy(f[recordHeaderSize:], rec)
	return dst
}

// frameHeader is a decoded, not yet verified, record header.
type frameHeader struct {
	sum   uint64
	n     int // payload length
	flags uint32
	lsn   LSN
}

func decodeFrameHeader(b []byte) frameHeader {
	return frameHeader{
		sum:   binary.LittleEndian.Uint64(b[0:8]),
		n:     int(binary.LittleEndian.Uint32(b[8:12])),
		flags: binary.LittleEndian.Uint32(b[12:16]),
		lsn:   LSN(binary.LittleEndian.Uint64(b[16:24])),
	}
}

// plausible reports whether h could be a record header, before looking
// at the payload.
func (h frameHeader) plausible() bool {
	return h.n <= MaxRecordSize && h.flags == 0 && h.lsn != 0
}

// verify reports whether payload (h.n bytes) matches h.sum; hdr is the
// raw 24-byte header.
func (h frameHeader) verify(hdr, payload []byte) bool {
	d := payloadDigest(payload)
	d.Write(hdr[8:24])
	return d.Sum64() == h.sum
}

// segmentName is the file name of segment num: 16 hex digits, so that
// names sort in segment order.
func segmentName(num uint64) string {
	return fmt.Sprintf("%016x%s", num, segmentSuffix)
}

// parseSegmentName returns the number of a segment file name.
func parseSegmentName(name string) (uint64, bool) {
	hex, ok := strings.CutSuffix(name, segmentSuffix)
	if !ok || len(hex) != 16 {
		return 0, false
	}
	n, err := strconv.ParseUint(hex, 16, 64)
	return n, err == nil
}
