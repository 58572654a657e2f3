package ivfpq

import "github.com/memrl/memrl/simd"

// 4-bit fast-scan code layout (see simd's package doc): vectors are stored
// in blocks of 32; a block holds ceil(M/2) groups of 32 bytes, group p
// packing sub-space 2p in the low nibble and 2p+1 in the high nibble of each
// of the block's 32 vectors. Slots past the last vector are zero and are
// never reported (callers bound every index by the segment's length).

// block4Bytes is the size of one block of 32 vectors with m sub-spaces.
func block4Bytes(m int) int { return (m + 1) / 2 * simd.FastScanBlock }

// codes4Len is the byte length of n vectors' 4-bit codes.
func codes4Len(n, m int) int {
	return (n + simd.FastScanBlock - 1) / simd.FastScanBlock * block4Bytes(m)
}

// appendCode4 adds vector number n (the segment's current length) with the
// unpacked code (one 0..15 value per sub-space) to codes, starting a new
// zeroed block when n is a multiple of 32.
func appendCode4(codes []byte, n, m int, code []byte) []byte {
	if n%simd.FastScanBlock == 0 {
		codes = append(codes, make([]byte, block4Bytes(m))...)
	}
	blk := codes[n/simd.FastScanBlock*block4Bytes(m):]
	j := n % simd.FastScanBlock
	for s := 0; s < m; s++ {
		c := code[s] & 15
		if s%2 == 1 {
			c <<= 4
		}
		blk[s/2*simd.FastScanBlock+j] |= c
	}
	return codes
}

// getCode4 unpacks vector i's code from codes into out ([m]byte).
func getCode4(codes []byte, i, m int, out []byte) {
	blk := codes[i/simd.FastScanBlock*block4Bytes(m):]
	j := i % simd.FastScanBlock
	for s := 0; s < m; s++ {
		b := blk[s/2*simd.FastScanBlock+j]
		if s%2 == 1 {
			b >>= 4
		}
		out[s] = b & 15
	}
}
