package engine

import "github.com/memrl/memrl/engine/filter"

// Attributes: a JSON object a memory may carry besides its payload (the
// SETATTR convention of Redis vector sets), for front ends to filter on.
// They live in memory with the memory (memExt), are logged (recAddExt,
// recSetAttrs) and checkpointed (version 4), and are stored compact.

// MaxAttrs is the largest attribute object, in bytes as given (before
// compaction): attributes are held in memory for every memory that has
// them, so they are metadata, not documents (those go in the payload).
// The filter language sets the limits (engine/filter/limits.go).
const MaxAttrs = filter.MaxAttrsLen

// MaxAttrsDepth bounds how deeply attribute values nest (the object itself
// is depth 1), so that no client can make a decoder or a filter recurse
// without bound.
const MaxAttrsDepth = filter.MaxAttrsDepth

// memExt is what a memory may carry beyond its vector, payload and Q:
// attributes, an external key and an expiry. Most memories carry none, so
// memory holds a pointer (nil for none) rather than the fields.
//
// INVARIANT: a memExt is never changed once a memory refers to it; a
// change stores a new one. A checkpoint copies memories under the
// collection's read lock and encodes them after releasing it, so the
// copies must not change under it.
type memExt struct {
	attrs   []byte // compact JSON object, or nil for none
	key     string // external key (keys.go), or "" for none
	expires int64  // unix nanoseconds at which the memory expires (expiry.go), or 0 for never
}

// extOrZero returns m's extension, or the zero one when it has none.
func (m memory) extOrZero() memExt {
	if m.ext == nil {
		return memExt{}
	}
	return *m.ext
}

func (m memory) attrs() []byte  { return m.extOrZero().attrs }
func (m memory) key() string    { return m.extOrZero().key }
func (m memory) expires() int64 { return m.extOrZero().expires }

// makeExt returns the extension holding attrs, key and expires: nil when
// they are all empty, so that a memory without them costs one nil pointer.
func makeExt(attrs []byte, key string, expires int64) *memExt {
	if len(attrs) == 0 && key == "" && expires == 0 {
		return nil
	}
	if len(attrs) == 0 {
		attrs = nil
	}
	return &memExt{attrs: attrs, key: key, expires: expires}
}

// validateAttrs checks attrs (JSON text as a client sent it) and returns
// its compact form, what is stored. An empty attrs is valid and means
// none. Otherwise the filter language's rules apply (filter.ValidateAttrs:
// one JSON object of at most MaxAttrs bytes, nested at most MaxAttrsDepth
// deep, valid UTF-8, unique top-level keys, numbers within float64's
// range), so that every stored attribute reads the same to every filter.
// Errors wrap ErrBadAttrs (which is filter.ErrBadAttrs) and say what is
// wrong.
func validateAttrs(attrs []byte) ([]byte, error) {
	if len(attrs) == 0 {
		return nil, nil
	}
	return filter.ValidateAttrs(attrs)
}
