package engine

import "github.com/memrl/memrl/vfs"

// rowMem is the memory that holds a collection's vector rows when they are
// kept resident (Options.MapFiles false) rather than read through a
// mapping of the vector file: vfs.AllocResident's, outside the Go heap and
// in huge pages where the system offers them.
//
// Why a copy, and why huge pages: a retrieval re-ranks about a hundred
// candidates whose rows are scattered over the file, and with 4 KB pages
// each row is a TLB miss as well as a cache miss. A shared file mapping
// gets 4 KB pages for rows the engine wrote itself (the page cache holds
// them small), so the re-rank paid a page walk per row; and on a kernel
// that isolates its page tables without PCIDs every system call flushes
// the TLB, so through the server (a read and a write per request) the
// walks started cold: at a million memories the re-rank took 62 µs a
// query there against 21 µs in process, and 7 µs in both with the rows in
// 2 MB pages (bench/README.md, "Per core through the server").
type rowMem struct {
	b    []byte
	free func() error // nil when nothing is held
}

// allocRowMem returns rowMem of at least size bytes (see vfs.AllocResident).
func allocRowMem(size int64) (rowMem, error) {
	b, free, err := vfs.AllocResident(size)
	if err != nil {
		return rowMem{}, err
	}
	return rowMem{b: b, free: free}, nil
}

// release frees the memory. The rows must no longer be used.
func (m *rowMem) release() error {
	var err error
	if m.free != nil {
		err = m.free()
	}
	m.b, m.free = nil, nil
	return err
}
