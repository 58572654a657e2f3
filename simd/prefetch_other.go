//go:build !amd64

package simd

// Prefetch hints that v will be read soon. Without an assembly kernel for
// this architecture it does nothing.
func Prefetch(v []float32) {}

// PrefetchBytes does nothing on this architecture.
func PrefetchBytes(b []byte) {}
