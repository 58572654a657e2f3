package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Attributes: a JSON object a memory may carry besides its payload (the
// SETATTR convention of Redis vector sets), for front ends to filter on.
// They live in memory with the memory (memExt), are logged (recAddExt,
// recSetAttrs) and checkpointed (version 4), and are stored compact.

// MaxAttrs is the largest attribute object, in bytes as given (before
// compaction): attributes are held in memory for every memory that has
// them, so they are metadata, not documents (those go in the payload).
const MaxAttrs = 64 << 10

// MaxAttrsDepth bounds how deeply attribute values nest (the object itself
// is depth 1), so that no client can make a decoder or a filter recurse
// without bound.
const MaxAttrsDepth = 16

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

// ext returns m's extension, or the zero one.
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
// its compact form. An empty attrs is valid and means none. It enforces:
// at most MaxAttrs bytes; one JSON object (not an array, a string or
// several values); nesting at most MaxAttrsDepth deep. Errors wrap
// ErrBadAttrs and say what is wrong (and where, for malformed JSON).
//
// TODO(issue 9): engine/filter.ValidateAttrs replaces this once it lands,
// so that what is stored is what the filter language can read.
func validateAttrs(attrs []byte) ([]byte, error) {
	if len(attrs) == 0 {
		return nil, nil
	}
	if len(attrs) > MaxAttrs {
		return nil, fmt.Errorf("%w: %d bytes, the limit is %d", ErrBadAttrs, len(attrs), MaxAttrs)
	}
	// json.Compact validates as it goes (one value, nothing after it but
	// white space) and keeps numbers and strings as written.
	var out bytes.Buffer
	out.Grow(len(attrs))
	if err := json.Compact(&out, attrs); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			if se.Offset >= int64(len(attrs)) {
				return nil, fmt.Errorf("%w: malformed JSON: cut short", ErrBadAttrs)
			}
			return nil, fmt.Errorf("%w: malformed JSON at byte %d: %v", ErrBadAttrs, se.Offset, err)
		}
		return nil, fmt.Errorf("%w: malformed JSON: %v", ErrBadAttrs, err)
	}
	b := out.Bytes()
	if b[0] != '{' {
		return nil, fmt.Errorf("%w: must be a JSON object ({...})", ErrBadAttrs)
	}
	if d := jsonDepth(b); d > MaxAttrsDepth {
		return nil, fmt.Errorf("%w: nested %d deep, the limit is %d", ErrBadAttrs, d, MaxAttrsDepth)
	}
	return b, nil
}

// jsonDepth returns how deeply objects and arrays nest in b, valid JSON.
func jsonDepth(b []byte) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}
