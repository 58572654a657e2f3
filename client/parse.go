package client

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// Reply readers. go-redis gives a RESP2 reply as string (simple and bulk
// strings), int64, []any, or nil (a null bulk string or array).

func badReply(what string, v any) error {
	return fmt.Errorf("%w: %s, got %T %.64v", ErrBadReply, what, v, v)
}

func parseOK(v any) (struct{}, error) {
	if s, ok := v.(string); ok && s == "OK" {
		return struct{}{}, nil
	}
	return struct{}{}, badReply("OK expected", v)
}

func parseInt(v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case string:
		if n, err := strconv.ParseInt(x, 10, 64); err == nil {
			return n, nil
		}
	}
	return 0, badReply("an integer expected", v)
}

func parseBool(v any) (bool, error) {
	n, err := parseInt(v)
	return n != 0, err
}

// parseFloat reads a float, which the server sends as a bulk string in its
// shortest round-trip form (similarities as float32, Q and scores as
// float64: both parse exactly into a float64).
func parseFloat(v any) (float64, error) {
	switch x := v.(type) {
	case string:
		if f, err := strconv.ParseFloat(x, 64); err == nil {
			return f, nil
		}
	case int64:
		return float64(x), nil
	}
	return 0, badReply("a float expected", v)
}

func parseString(v any) (string, error) {
	if s, ok := v.(string); ok {
		return s, nil
	}
	return "", badReply("a string expected", v)
}

// parseBytes reads a bulk string that may be null (nil).
func parseBytes(v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case string:
		return []byte(x), nil
	}
	return nil, badReply("a bulk string expected", v)
}

// parsePayload reads a payload: nil for a memory without one (the server
// sends an empty bulk string) or a null (deleted meanwhile), as Result and
// Memory document; the protocol has no empty payload distinct from none.
func parsePayload(v any) ([]byte, error) {
	b, err := parseBytes(v)
	if len(b) == 0 {
		return nil, err
	}
	return b, err
}

func parseArray(v any) ([]any, error) {
	if a, ok := v.([]any); ok {
		return a, nil
	}
	return nil, badReply("an array expected", v)
}

func parseStrings(v any) ([]string, error) {
	a, err := parseArray(v)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(a))
	for i, x := range a {
		if out[i], err = parseString(x); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func parseFloats(v any) ([]float64, error) {
	a, err := parseArray(v)
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(a))
	for i, x := range a {
		if out[i], err = parseFloat(x); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func parseInts(v any) ([]int64, error) {
	a, err := parseArray(v)
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(a))
	for i, x := range a {
		if out[i], err = parseInt(x); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// parseFields reads a field/value array into a map. Fields this package
// does not know are kept, and ignored by the callers: a newer server may
// add fields.
func parseFields(v any) (map[string]any, error) {
	a, err := parseArray(v)
	if err != nil {
		return nil, err
	}
	if len(a)%2 != 0 {
		return nil, badReply("a field/value array of even length expected", len(a))
	}
	m := make(map[string]any, len(a)/2)
	for i := 0; i < len(a); i += 2 {
		k, err := parseString(a[i])
		if err != nil {
			return nil, err
		}
		m[k] = a[i+1]
	}
	return m, nil
}

// parseAttrs decodes attributes (compact JSON, or null for none). Numbers
// become float64, as encoding/json decodes them into an any.
func parseAttrs(v any) (map[string]any, error) {
	if v == nil {
		return nil, nil
	}
	s, err := parseString(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("%w: attributes are not a JSON object: %v", ErrBadReply, err)
	}
	return m, nil
}

// encodeAttrs returns attrs as JSON for ATTRS and MEM.SETATTR.
func encodeAttrs(attrs map[string]any) ([]byte, error) {
	b, err := json.Marshal(attrs)
	if err != nil {
		return nil, fmt.Errorf("memrl client: attributes cannot be encoded as JSON: %w", err)
	}
	return b, nil
}

// parseMillis reads Unix milliseconds; null (never) is the zero Time.
func parseMillis(v any) (time.Time, error) {
	if v == nil {
		return time.Time{}, nil
	}
	ms, err := parseInt(v)
	if err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(ms), nil
}

// into parses v into *dst.
func into[T any](dst *T, v any, parse func(any) (T, error)) error {
	x, err := parse(v)
	if err != nil {
		return err
	}
	*dst = x
	return nil
}

func fieldErr(cmd, field string, err error) error {
	return fmt.Errorf("%s field %q: %w", cmd, field, err)
}

// parseOptString reads a bulk string that may be null ("").
func parseOptString(v any) (string, error) {
	if v == nil {
		return "", nil
	}
	return parseString(v)
}

// firstErr returns the first non-nil error.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
