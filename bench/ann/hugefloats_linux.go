package ann

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugeFloats returns a zeroed slice of n float32s in an anonymous mapping
// that asked for huge pages (madvise(MADV_HUGEPAGE)), falling back to the
// Go heap when the mapping fails.
//
// Why: the search re-ranks its candidates from rows scattered over the
// base (512 MB at 1M SIFT), each a TLB miss in 4 KB pages, and the Go heap
// asks for no huge pages under the default transparent-huge-page setting
// ("madvise"). The engine's vector file is mapped with the same advice
// (vfs.Mapping.AdviseHugePages), so this models what a served collection
// gets once its rows come from the device. The mapping is never unmapped:
// the base lives as long as the benchmark.
func hugeFloats(n int) []float32 {
	if n == 0 {
		return nil
	}
	const huge = 2 << 20
	size := (n*4 + huge - 1) &^ (huge - 1)
	// Map one huge page more than needed and start at a 2 MB boundary, so
	// every page of the slice can be a huge one.
	b, err := unix.Mmap(-1, 0, size+huge, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return make([]float32, n)
	}
	off := (huge - int(uintptr(unsafe.Pointer(&b[0]))&(huge-1))) & (huge - 1)
	b = b[off : off+size]
	_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), n)
}
