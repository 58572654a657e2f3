package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
// ErrBadAttrs and say what is wrong.
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
	d := json.NewDecoder(bytes.NewReader(attrs))
	d.UseNumber()
	depth, maxDepth := 0, 0
	first := true
	for {
		tok, err := d.Token()
		if err != nil {
			if errors.Is(err, io.EOF) && !first && depth == 0 {
				break
			}
			return nil, fmt.Errorf("%w: %v", ErrBadAttrs, jsonErr(err))
		}
		if first {
			if delim, ok := tok.(json.Delim); !ok || delim != '{' {
				return nil, fmt.Errorf("%w: must be a JSON object ({...})", ErrBadAttrs)
			}
			first = false
		} else if depth == 0 {
			return nil, fmt.Errorf("%w: text after the JSON object", ErrBadAttrs)
		}
		if delim, ok := tok.(json.Delim); ok {
			switch delim {
			case '{', '[':
				depth++
				maxDepth = max(maxDepth, depth)
				if depth > MaxAttrsDepth {
					return nil, fmt.Errorf("%w: nested more than %d deep", ErrBadAttrs, MaxAttrsDepth)
				}
			default:
				depth--
			}
		}
	}
	// The tokenizer accepted it, so it is one valid object: compact it
	// (json.Compact also validates, and keeps numbers as written).
	var out bytes.Buffer
	if err := json.Compact(&out, attrs); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadAttrs, jsonErr(err))
	}
	return out.Bytes(), nil
}

// jsonErr words a decoding error for a client: encoding/json's "unexpected
// EOF" says little about attributes cut short.
func jsonErr(err error) string {
	if err.Error() == "unexpected EOF" {
		return "malformed JSON: cut short"
	}
	return "malformed JSON: " + err.Error()
}
