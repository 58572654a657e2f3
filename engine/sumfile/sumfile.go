package sumfile

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/cespare/xxhash/v2"
)

// The layout of vectors.sum (doc.go).
const (
	Magic      = "MRLVSUM\x00"
	Version    = 1
	HeaderSize = 32
)

var le = binary.LittleEndian

// Header is the decoded header of vectors.sum.
type Header struct {
	Dim uint32 // the collection's dimension
	// LegacyPayloadEnd: payload bytes below it were written before
	// payload checksums existed, and carry none.
	LegacyPayloadEnd uint64
}

// EncodeHeader returns h's HeaderSize bytes, checksum included.
func EncodeHeader(h Header) []byte {
	b := make([]byte, 0, HeaderSize)
	b = append(b, Magic...)
	b = le.AppendUint32(b, Version)
	b = le.AppendUint32(b, h.Dim)
	b = le.AppendUint64(b, h.LegacyPayloadEnd)
	return le.AppendUint64(b, xxhash.Sum64(b))
}

// DecodeHeader parses the header at the start of b (bytes past HeaderSize
// are not looked at). Every error means a damaged or foreign header: it
// says what is wrong, and the caller names the file and wraps its own
// corruption sentinel around it.
func DecodeHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, fmt.Errorf("header is %d bytes, want %d", len(b), HeaderSize)
	}
	if xxhash.Sum64(b[:24]) != le.Uint64(b[24:32]) {
		return Header{}, fmt.Errorf("header fails its checksum")
	}
	if !bytes.Equal(b[:8], []byte(Magic)) {
		return Header{}, fmt.Errorf("not a vector checksum file")
	}
	if v := le.Uint32(b[8:12]); v != Version {
		return Header{}, fmt.Errorf("format version %d, this memrl reads %d (written by a newer memrl?)", v, Version)
	}
	return Header{Dim: le.Uint32(b[12:16]), LegacyPayloadEnd: le.Uint64(b[16:24])}, nil
}

// Offset is where row r's checksum lives in vectors.sum.
func Offset(r uint32) int64 { return HeaderSize + 8*int64(r) }

// RowSum is row r's checksum: xxhash64 of its bytes, mixed with r so that
// a row read from the wrong place fails too.
func RowSum(r uint32, row []float32) uint64 {
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(row))), len(row)*4)
	return xxhash.Sum64(b) ^ (uint64(r)+1)*0x9e3779b97f4a7c15
}

// PayloadSumSize is the size of the checksum that follows each payload.
const PayloadSumSize = 8

// PayloadSum is the checksum stored after a payload: xxhash64 of the
// memory's id, the payload's offset and its bytes, so that a payload read
// for another memory, or from another place, fails too.
func PayloadSum(id, off uint64, p []byte) uint64 {
	var d xxhash.Digest
	d.Reset()
	var b [16]byte
	le.PutUint64(b[:8], id)
	le.PutUint64(b[8:], off)
	d.Write(b[:])
	d.Write(p)
	return d.Sum64()
}
