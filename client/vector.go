package client

import (
	"encoding/binary"
	"fmt"
	"math"
)

// EncodeFP32 returns v as the protocol's FP32 blob: each component as
// little-endian float32 bytes (4·len(v) bytes). Every method that takes a
// vector sends it this way.
func EncodeFP32(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

// DecodeFP32 reads an FP32 blob (as WITHVECTOR returns it) into a vector.
// Its length must be a multiple of 4.
func DecodeFP32(b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("%w: an FP32 blob of %d bytes, not a multiple of 4", ErrBadReply, len(b))
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}
