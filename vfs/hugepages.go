package vfs

// Huge pages for read-mostly mappings.
//
// A search at a million vectors reads a few hundred kilobytes of an index's
// lists and a hundred or so rows scattered over the vector file. With 4 KB
// pages nearly every list and every row is a TLB miss and a page walk, and
// the hardware prefetcher, which stops at page boundaries, restarts every
// 4 KB. Backed by 2 MB pages, the 34 MB index of 1M SIFT vectors is 17 TLB
// entries: a search at 1M (IVF2048,PQ52x4) took 10-15% less CPU with its
// index file so mapped, and another 8-10% with the vectors it re-ranks
// from in huge pages too (bench/README.md, "Huge pages").
//
// The kernel gives a file mapping huge pages only when the file's cached
// pages are huge folios, which it allocates when it reads the file from
// the device for a mapping that asked for them (MADV_HUGEPAGE; file systems
// with large folios: tmpfs mounted huge=, ext4 and XFS on recent kernels).
// Pages cached by write(2) are small and stay so. Hence the pair:
// DropCachedPages after a file is written and synced, AdviseHugePages on
// the mapping before its first read. Both are hints: where the kernel or
// the file system cannot honour them the mapping works as before.

// AdviseHugePages asks the kernel to back m with huge pages
// (madvise(MADV_HUGEPAGE) on Linux). Call it before the mapping's bytes are
// first read: pages already cached keep their size. It is a hint, and does
// nothing for a nil, empty or copied (MemFS) mapping or off Linux; a kernel
// that refuses it is ignored, since the mapping only stays slower.
func (m *Mapping) AdviseHugePages() {
	if m == nil || m.unmap == nil || len(m.data) == 0 {
		return
	}
	adviseHugePages(m.data)
}

// CacheDropper is implemented by files whose clean cached pages can be
// dropped (Linux posix_fadvise(POSIX_FADV_DONTNEED)). OS files on Linux
// implement it; MemFS files, whose bytes are the file, do not.
type CacheDropper interface {
	// DropCache asks the kernel to drop the file's clean, unmapped pages
	// from its cache.
	DropCache() error
}

// DropCachedPages asks the kernel to drop the cached pages of the file
// name of fs, so that the next mapping reads them afresh (and, advised, as
// huge pages). The caller must have synced the file: dirty pages are not
// dropped. Pages mapped elsewhere stay. A hint: files without DropCache
// (MemFS) are left alone, and a failure is ignored, since the file then
// only stays cached as it was.
func DropCachedPages(fs FS, name string) {
	f, err := fs.Open(name)
	if err != nil {
		return
	}
	defer f.Close()
	if d, ok := f.(CacheDropper); ok {
		d.DropCache()
	}
}
