package engine

import (
	"bytes"
	"fmt"
	"unsafe"

	"github.com/cespare/xxhash/v2"
)

// The checksum file of a collection, vectors.sum, declares the format of
// the collection's files and holds one checksum per vector row:
//
//	offset 0   magic            [8]byte "MRLVSUM\x00"
//	       8   version          u32 = 1
//	      12   dim              u32
//	      16   legacyPayloadEnd u64: payload bytes below it are of the
//	                            unchecksummed format (see payloadStore)
//	      24   header checksum  u64: xxhash64 of bytes [0, 24)
//	      32   row checksums    u64 each: row r's at 32 + 8r (rowSum)
//
// All integers are little-endian. A collection created before checksums
// existed has no such file (or an empty one); recovery then sums the rows
// as found and writes the file, with legacyPayloadEnd set to the payload
// bytes in use, so payloads written before are read as before (and are
// the only data not checked), and every later one carries a checksum.
// A damaged header stops Open: without it, the payload file cannot be
// read.
const (
	sumsMagic      = "MRLVSUM\x00"
	sumsVersion    = 1
	sumsHeaderSize = 32
)

// sumsHeader is the decoded header of vectors.sum.
type sumsHeader struct {
	dim              uint32
	legacyPayloadEnd uint64
}

func encodeSumsHeader(h sumsHeader) []byte {
	b := make([]byte, 0, sumsHeaderSize)
	b = append(b, sumsMagic...)
	b = le.AppendUint32(b, sumsVersion)
	b = le.AppendUint32(b, h.dim)
	b = le.AppendUint64(b, h.legacyPayloadEnd)
	return le.AppendUint64(b, xxhash.Sum64(b))
}

// decodeSumsHeader parses a vectors.sum header; errors wrap ErrCorrupt.
func decodeSumsHeader(b []byte, path string) (sumsHeader, error) {
	if len(b) < sumsHeaderSize {
		return sumsHeader{}, fmt.Errorf("%w: %s: header is %d bytes, want %d", ErrCorrupt, path, len(b), sumsHeaderSize)
	}
	if xxhash.Sum64(b[:24]) != le.Uint64(b[24:32]) {
		return sumsHeader{}, fmt.Errorf("%w: %s: header fails its checksum", ErrCorrupt, path)
	}
	if !bytes.Equal(b[:8], []byte(sumsMagic)) {
		return sumsHeader{}, fmt.Errorf("%w: %s: not a vector checksum file", ErrCorrupt, path)
	}
	if v := le.Uint32(b[8:12]); v != sumsVersion {
		return sumsHeader{}, fmt.Errorf("%w: %s: format version %d, this memrl reads %d (written by a newer memrl?)", ErrCorrupt, path, v, sumsVersion)
	}
	return sumsHeader{dim: le.Uint32(b[12:16]), legacyPayloadEnd: le.Uint64(b[16:24])}, nil
}

// sumsOffset is where row r's checksum lives in vectors.sum.
func sumsOffset(r uint32) int64 { return sumsHeaderSize + 8*int64(r) }

// rowSum is row r's checksum: xxhash64 of its bytes, mixed with r so that
// a row read from the wrong place fails too.
func rowSum(r uint32, row []float32) uint64 {
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(row))), len(row)*4)
	return xxhash.Sum64(b) ^ (uint64(r)+1)*0x9e3779b97f4a7c15
}

// payloadSumSize is the size of the checksum that follows each payload.
const payloadSumSize = 8

// payloadSum is the checksum stored after a payload: xxhash64 of the
// memory's id, the payload's offset and its bytes, so that a payload read
// for another memory, or from another place, fails too.
func payloadSum(id, off uint64, p []byte) uint64 {
	var d xxhash.Digest
	d.Reset()
	var b [16]byte
	le.PutUint64(b[:8], id)
	le.PutUint64(b[8:], off)
	d.Write(b[:])
	d.Write(p)
	return d.Sum64()
}
