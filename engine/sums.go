package engine

import (
	"fmt"

	"github.com/memrl/memrl/engine/sumfile"
)

// The checksums of the collection's files; their format is package
// sumfile's. These names keep the engine's code short.

type sumsHeader = sumfile.Header

const (
	sumsHeaderSize = sumfile.HeaderSize
	payloadSumSize = sumfile.PayloadSumSize
)

func encodeSumsHeader(h sumsHeader) []byte { return sumfile.EncodeHeader(h) }

// decodeSumsHeader parses the header of vectors.sum at path; errors wrap
// ErrCorrupt.
func decodeSumsHeader(b []byte, path string) (sumsHeader, error) {
	h, err := sumfile.DecodeHeader(b)
	if err != nil {
		return h, fmt.Errorf("%w: %s: %w", ErrCorrupt, path, err)
	}
	return h, nil
}

func sumsOffset(r uint32) int64                  { return sumfile.Offset(r) }
func rowSum(r uint32, row []float32) uint64      { return sumfile.RowSum(r, row) }
func payloadSum(id, off uint64, p []byte) uint64 { return sumfile.PayloadSum(id, off, p) }
