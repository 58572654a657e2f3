package vfs

import "fmt"

// HugePage is the size AllocResident rounds up to and aligns on: the x86-64
// and arm64 transparent huge page.
const HugePage = 2 << 20

// AllocResident returns size bytes of zeroed, writable memory. From
// HugePage up it is outside the Go heap, rounded up to whole huge pages,
// starting on a huge-page boundary, and on Linux advised for transparent
// huge pages (resident_linux.go): data read at random, such as the
// engine's vector rows and an index's lists, is then a TLB hit where 4 KB
// pages made it a page walk. Pages are committed as they are first
// written, so memory reserved past what is used costs address space only.
// Below HugePage it is exactly size bytes of the Go heap. free releases
// it; the bytes must not be used afterwards. On other systems the memory
// always comes from the Go heap.
//
// Why outside the Go heap: the collector neither scans nor counts it, so
// half a gigabyte of floats does not let garbage grow by as much before
// each collection.
//
// Why not below a huge page: a huge page commits all of its 2 MiB at the
// first write, so every small collection held 2 MiB of rows, and 2 more
// for its index after a restart (issue 26: 4,096 collections of 80 MB of
// vectors took 10.5 GB, 17.9 GB after a restart). Nor is there a TLB miss
// to save there: less than 2 MiB spans at most 512 small pages, which the
// second-level TLB holds.
func AllocResident(size int64) (b []byte, free func() error, err error) {
	if size < 0 {
		return nil, nil, fmt.Errorf("vfs: resident memory of %d bytes", size)
	}
	if size < HugePage {
		return make([]byte, size), func() error { return nil }, nil
	}
	return allocResident((size + HugePage - 1) / HugePage * HugePage)
}

// MapResident is Map with the bytes copied into memory from AllocResident
// instead of mapped: reads of them never fault, and on Linux they sit in
// huge pages, which a shared mapping of a file gets only for page-cache
// pages the kernel happened to cache as large folios. It costs a read of
// the file and memory that the kernel cannot evict; the copy does not
// show later writes to the file (use it for files that do not change).
// length must not exceed the file's size.
func MapResident(f File, length int) (*Mapping, error) {
	if length < 0 {
		return nil, fmt.Errorf("vfs: map: negative length %d", length)
	}
	b, free, err := AllocResident(int64(length))
	if err != nil {
		return nil, err
	}
	b = b[:length:length]
	if length > 0 {
		if _, err := f.ReadAt(b, 0); err != nil {
			free()
			return nil, fmt.Errorf("vfs: reading %d bytes into memory: %w", length, err)
		}
	}
	return &Mapping{data: b, unmap: free}, nil
}
