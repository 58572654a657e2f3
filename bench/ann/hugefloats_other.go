//go:build !linux

package ann

// hugeFloats returns a zeroed slice of n float32s (see the Linux version).
func hugeFloats(n int) []float32 { return make([]float32, n) }
