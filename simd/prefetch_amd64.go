package simd

import "unsafe"

// prefetchLines asks the CPU to bring the cache lines of bytes [p, p+n)
// into the cache (prefetch_amd64.s). REQUIRES: n >= 1.
//
//go:noescape
func prefetchLines(p *byte, n int)

// Prefetch hints that v will be read soon: it starts loading every cache
// line of v without waiting for them, so that loads of several rows that
// miss the cache overlap instead of following one another. It has no
// other effect (a prefetch never faults); on other architectures it does
// nothing.
func Prefetch[T Prefetchable](v []T) {
	if len(v) == 0 {
		return
	}
	prefetchLines((*byte)(unsafe.Pointer(&v[0])), int(unsafe.Sizeof(v[0]))*len(v))
}
