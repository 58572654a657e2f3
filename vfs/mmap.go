package vfs

import (
	"errors"
	"fmt"

	"github.com/edsrzf/mmap-go"
)

// ErrNotMappable is returned by Map for a file of an FS that offers no way
// to map it (a wrapper that hides the file's Mapper).
var ErrNotMappable = errors.New("vfs: file cannot be mapped")

// Mapping is a read-only view of the first bytes of a file, made by Map.
// Its bytes stay valid until Unmap, also after the file is closed.
type Mapping struct {
	data  []byte
	unmap func() error // nil for a copy
}

// Bytes returns the mapped bytes (nil for a nil or unmapped Mapping). The
// caller must not write to them, nor use them after Unmap.
func (m *Mapping) Bytes() []byte {
	if m == nil {
		return nil
	}
	return m.data
}

// Unmap releases the mapping. It is safe on a nil Mapping and to call more
// than once.
func (m *Mapping) Unmap() error {
	if m == nil || m.data == nil {
		return nil
	}
	m.data = nil
	if m.unmap == nil {
		return nil
	}
	err := m.unmap()
	m.unmap = nil
	return err
}

// Mapper is implemented by files that Map can map. Implementations outside
// this package (wrappers in tests) forward it to the file they wrap.
type Mapper interface {
	// MapReadOnly maps bytes [0, length) of the file read-only.
	MapReadOnly(length int) (*Mapping, error)
	// MapShared reports whether a mapping shows writes made to the file
	// after it was made (true for OS files, false for MemFS copies).
	MapShared() bool
}

// Map maps bytes [0, length) of f read-only: a shared mmap for an OS file,
// a copy of the bytes for a MemFS file (see the package doc). length may
// exceed the file's size only for OS files, where the pages past the end
// must not be read; MemFS refuses it. A file that is no Mapper gives
// ErrNotMappable.
func Map(f File, length int) (*Mapping, error) {
	mp, ok := f.(Mapper)
	if !ok {
		return nil, ErrNotMappable
	}
	if length < 0 {
		return nil, fmt.Errorf("vfs: map: negative length %d", length)
	}
	return mp.MapReadOnly(length)
}

// MapShared reports whether Map of f gives a mapping that shows later
// writes to f. Callers that write a file while it is mapped (the engine's
// vector file) keep their own copy when it is false.
func MapShared(f File) bool {
	mp, ok := f.(Mapper)
	return ok && mp.MapShared()
}

// MapReadOnly implements Mapper with a shared, read-only mmap.
func (f osFile) MapReadOnly(length int) (*Mapping, error) {
	if length == 0 {
		return &Mapping{data: []byte{}}, nil
	}
	mm, err := mmap.MapRegion(f.File, length, mmap.RDONLY, 0, 0)
	if err != nil {
		return nil, fmt.Errorf("vfs: mmap %s: %w", f.Name(), err)
	}
	return &Mapping{data: mm, unmap: mm.Unmap}, nil
}

// MapShared implements Mapper: the page cache makes writes visible at once.
func (osFile) MapShared() bool { return true }

var _ Mapper = osFile{}

// MapReadOnly implements Mapper with a copy of the file's bytes as they are
// now: a MemFS file has no pages to share. length must not exceed the
// file's size.
func (f *memFile) MapReadOnly(length int) (*Mapping, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("mmap", false); err != nil {
		return nil, err
	}
	if length > len(f.node.data) {
		return nil, fmt.Errorf("vfs: mmap %s: %d bytes past its %d-byte end: %w", f.name, length, len(f.node.data), ErrNotMappable)
	}
	return &Mapping{data: append(make([]byte, 0, length), f.node.data[:length]...)}, nil
}

// MapShared implements Mapper: a MemFS mapping is a copy.
func (*memFile) MapShared() bool { return false }

var _ Mapper = (*memFile)(nil)
