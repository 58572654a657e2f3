//go:build !amd64

package simd

// Prefetch hints that v will be read soon. Without an assembly kernel for
// this architecture it does nothing.
func Prefetch[T Prefetchable](v []T) {}
