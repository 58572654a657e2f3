package simd

import "math"

// ToFloat16 returns f as an IEEE 754 half-precision float (binary16),
// rounded to nearest, ties to even: magnitudes from 65520 up become
// infinities, those below 2⁻²⁵ zeros (keeping the sign), and a NaN stays a
// (quiet) NaN.
func ToFloat16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b >> 23 & 0xff)
	man := b & 0x7fffff
	if exp == 0xff {
		if man != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	if e := exp - 127 + 15; e >= 1 {
		// A normal half, unless rounding carries it past 0x7bff: the
		// carry into the exponent is then exactly the overflow to +Inf.
		if e >= 31 {
			return sign | 0x7c00
		}
		h := uint32(e)<<10 | man>>13
		h = roundHalfEven(h, man&0x1fff, 0x1000)
		return sign | uint16(h)
	}
	// A subnormal half (or zero): f = m·2^(exp−150) with the implicit bit,
	// which in units of the half's 2⁻²⁴ is m >> (126 − exp).
	shift := 126 - exp
	if exp == 0 || shift > 24 {
		return sign // below half the smallest subnormal (2⁻²⁵) or a float32 subnormal
	}
	m := man | 0x800000
	h := roundHalfEven(m>>shift, m&(1<<shift-1), 1<<(shift-1))
	return sign | uint16(h)
}

// roundHalfEven rounds h up when the dropped bits rem exceed half, or
// equal it and h is odd.
func roundHalfEven(h, rem, half uint32) uint32 {
	if rem > half || rem == half && h&1 == 1 {
		h++
	}
	return h
}

// FromFloat16 returns the half-precision float h as a float32 (exactly: every
// half is a float32).
func FromFloat16(h uint16) float32 {
	if h&0x7c00 == 0x7c00 {
		return fromFloat16Special(h)
	}
	// Finite: the half's exponent and mantissa bits, moved to a float32's
	// places, read as a float32 2¹¹² times too small (the exponent biases
	// differ by 127 − 15); the product is exact, for subnormal halves too
	// (a float32 subnormal times a power of two). Without a branch on the
	// exponent's value, it is small enough for the reference kernels'
	// inner loops to inline.
	f := math.Float32frombits(uint32(h&0x7fff)<<13) * 0x1p112
	return math.Float32frombits(math.Float32bits(f) | uint32(h&0x8000)<<16)
}

// fromFloat16Special widens an infinity or NaN (exponent bits all ones),
// keeping the sign and the NaN's payload.
func fromFloat16Special(h uint16) float32 {
	return math.Float32frombits(uint32(h&0x8000)<<16 | 0x7f800000 | uint32(h&0x3ff)<<13)
}
