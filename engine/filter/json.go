package filter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// This file is a small JSON scanner over attributes: just enough to find
// an object's top-level members and an array's elements without decoding
// anything else. It never panics and never recurses, whatever the input:
// malformed input makes the walkers report false. ValidateAttrs is the
// gate that makes stored attributes well-formed.

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// scanString: b[i] is '"'. It returns the index just past the closing
// quote and whether the string holds escapes. It looks for quotes with
// bytes.IndexByte (vectorized), so long strings cost little.
func scanString(b []byte, i int) (end int, esc bool, ok bool) {
	j := i + 1
	for {
		q := bytes.IndexByte(b[j:], '"')
		if q < 0 {
			return 0, false, false
		}
		j += q
		// The quote is escaped if an odd number of backslashes precede it.
		k := j
		for k > i+1 && b[k-1] == '\\' {
			k--
		}
		if (j-k)%2 == 0 {
			return j + 1, esc || bytes.IndexByte(b[i+1:j], '\\') >= 0, true
		}
		esc = true
		j++
	}
}

// skipValue returns the index just past the value starting at b[i].
// Containers are skipped by counting brackets (strings skipped whole), so
// any nesting costs no stack.
func skipValue(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch b[i] {
	case '"':
		end, _, ok := scanString(b, i)
		return end, ok
	case '[', '{':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, _, ok := scanString(b, j)
				if !ok {
					return 0, false
				}
				j = end - 1
			case '[', '{':
				depth++
			case ']', '}':
				depth--
				if depth == 0 {
					return j + 1, true
				}
			}
		}
		return 0, false
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != ']' && b[j] != '}' && b[j] != ' ' &&
		b[j] != '\t' && b[j] != '\n' && b[j] != '\r' && b[j] != ':' && b[j] != '"' {
		j++
	}
	return j, j > i
}

// forEachMember calls fn with each top-level member of the object in b:
// its raw key (between the quotes; esc says it holds escapes) and its raw
// value. fn returns false to stop. forEachMember returns false if b is not
// an object (as far as it read).
func forEachMember(b []byte, fn func(key []byte, esc bool, val []byte) bool) bool {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return false
		}
		kend, esc, ok := scanString(b, i)
		if !ok {
			return false
		}
		key := b[i+1 : kend-1]
		i = skipWS(b, kend)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipWS(b, i+1)
		vend, ok := skipValue(b, i)
		if !ok {
			return false
		}
		if !fn(key, esc, b[i:vend]) {
			return true
		}
		i = skipWS(b, vend)
		if i >= len(b) {
			return false
		}
		if b[i] == '}' {
			return true
		}
		if b[i] != ',' {
			return false
		}
		i = skipWS(b, i+1)
	}
}

// forEachElement calls fn with each raw element of the array in b. fn
// returns false to stop. It returns false if b is not an array.
func forEachElement(b []byte, fn func(elem []byte) bool) bool {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '[' {
		return false
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return true
	}
	for {
		end, ok := skipValue(b, i)
		if !ok {
			return false
		}
		if !fn(b[i:end]) {
			return true
		}
		i = skipWS(b, end)
		if i >= len(b) {
			return false
		}
		if b[i] == ']' {
			return true
		}
		if b[i] != ',' {
			return false
		}
		i = skipWS(b, i+1)
	}
}

// scalar decodes a raw JSON value into a value of the language: a number
// (true and false as 1 and 0), a string, or an array (kept raw). Objects,
// null and malformed values have type 0: they fit no requirement.
//
// A string without escapes is returned without copying: its str aliases
// raw, so the value must not outlive raw (nor raw change while it lives).
func decodeValue(raw []byte) value {
	if len(raw) == 0 {
		return value{}
	}
	switch c := raw[0]; {
	case c == '"':
		if len(raw) < 2 || raw[len(raw)-1] != '"' {
			return value{}
		}
		s, ok := jsonString(raw[1 : len(raw)-1])
		if !ok {
			return value{}
		}
		return value{t: tStr, str: s}
	case c == '[':
		return value{t: tArr, str: aliasString(raw)}
	case c == 't':
		if string(raw) == "true" {
			return value{t: tNum, num: 1}
		}
	case c == 'f':
		if string(raw) == "false" {
			return value{t: tNum, num: 0}
		}
	case c == '-' || c >= '0' && c <= '9':
		v, err := strconv.ParseFloat(aliasString(raw), 64)
		if err == nil {
			return value{t: tNum, num: v}
		}
	}
	return value{}
}

// aliasString returns b's bytes as a string without copying. The caller
// must not keep the string beyond b's life nor change b while it is used.
func aliasString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// aliasBytes returns s's bytes without copying. The caller must not
// modify them.
func aliasBytes(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// jsonString decodes a JSON string's content (between the quotes). Without
// escapes it aliases content (see aliasString); with them it is a copy.
func jsonString(content []byte) (string, bool) {
	if bytes.IndexByte(content, '\\') < 0 {
		return aliasString(content), true
	}
	out := make([]byte, 0, len(content))
	for i := 0; i < len(content); {
		c := content[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(content) {
			return "", false
		}
		switch e := content[i+1]; e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, n, ok := decodeUEscape(string(content[i:min(i+12, len(content))]))
			if !ok {
				return "", false
			}
			out = utf8.AppendRune(out, r)
			i += n
			continue
		default:
			return "", false
		}
		i += 2
	}
	return string(out), true
}

// ValidateAttrs checks that b is acceptable as a memory's attributes and
// returns its compact form (encoding/json's Compact: insignificant space
// removed, nothing else changed), which is what should be stored. The rules
// (ErrBadAttrs): a JSON object, at most MaxAttrsLen bytes before
// compaction, nested at most MaxAttrsDepth levels, valid UTF-8, no
// duplicate top-level keys (so every field has one value), and every
// number within float64's range (so every number compares as written).
// Errors wrap ErrBadAttrs and say what is wrong.
func ValidateAttrs(b []byte) ([]byte, error) {
	if len(b) > MaxAttrsLen {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrBadAttrs, len(b), MaxAttrsLen)
	}
	if !utf8.Valid(b) {
		return nil, fmt.Errorf("%w: not valid UTF-8", ErrBadAttrs)
	}
	// Unmarshal into a RawMessage only checks the syntax, and (unlike
	// Compact) says where it went wrong.
	var raw json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) && se.Offset > 0 {
			return nil, fmt.Errorf("%w: not JSON: %v at byte %d", ErrBadAttrs, se, se.Offset)
		}
		return nil, fmt.Errorf("%w: not JSON: %v", ErrBadAttrs, err)
	}
	var buf bytes.Buffer
	buf.Grow(len(b))
	if err := json.Compact(&buf, b); err != nil {
		return nil, fmt.Errorf("%w: not JSON: %v", ErrBadAttrs, err)
	}
	c := buf.Bytes()
	if len(c) == 0 || c[0] != '{' {
		return nil, fmt.Errorf("%w: must be a JSON object", ErrBadAttrs)
	}
	// Compact output is valid JSON without space: walk it once for depth
	// and numbers.
	depth := 0
	for i := 0; i < len(c); i++ {
		switch ch := c[i]; {
		case ch == '"':
			end, _, ok := scanString(c, i)
			if !ok { // cannot happen after Compact; never loop on it
				return nil, fmt.Errorf("%w: unterminated string", ErrBadAttrs)
			}
			i = end - 1
		case ch == '{' || ch == '[':
			depth++
			if depth > MaxAttrsDepth {
				return nil, fmt.Errorf("%w: nested deeper than %d levels", ErrBadAttrs, MaxAttrsDepth)
			}
		case ch == '}' || ch == ']':
			depth--
		case ch == '-' || ch >= '0' && ch <= '9':
			j := i
			for j < len(c) && (c[j] == '-' || c[j] == '+' || c[j] == '.' || c[j] == 'e' || c[j] == 'E' || c[j] >= '0' && c[j] <= '9') {
				j++
			}
			if _, err := strconv.ParseFloat(string(c[i:j]), 64); err != nil {
				return nil, fmt.Errorf("%w: number %s out of range", ErrBadAttrs, c[i:j])
			}
			i = j - 1
		}
	}
	seen := make(map[string]struct{})
	var dup string
	hasDup := false
	forEachMember(c, func(key []byte, _ bool, _ []byte) bool {
		k, _ := jsonString(key)
		k = string([]byte(k)) // jsonString may alias c; the map keeps keys
		if _, ok := seen[k]; ok {
			dup, hasDup = k, true
			return false
		}
		seen[k] = struct{}{}
		return true
	})
	if hasDup {
		return nil, fmt.Errorf("%w: duplicate key %q", ErrBadAttrs, dup)
	}
	return c, nil
}
