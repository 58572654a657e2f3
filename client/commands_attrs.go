package client

import (
	"context"
	"time"
)

func setAttrSpec(coll string, ref Ref, attrs map[string]any) spec[struct{}] {
	var js []byte
	var err error
	if attrs != nil {
		js, err = encodeAttrs(attrs)
	}
	args := append(ref.appendArgs([]any{"MEM.SETATTR", coll}), js)
	if js == nil {
		args[len(args)-1] = "" // remove
	}
	return spec[struct{}]{args: args, parse: parseOK, err: err}
}

// SetAttr replaces the attributes of the memory ref names (MEM.SETATTR);
// nil removes them (an empty map stores the empty object {}).
// Errors: ErrNoMemory, ErrBadAttrs, ErrNoCollection.
func (c *Client) SetAttr(ctx context.Context, coll string, ref Ref, attrs map[string]any) error {
	_, err := run(ctx, c.rdb, setAttrSpec(coll, ref, attrs))
	return err
}

func getAttrSpec(coll string, ref Ref) spec[map[string]any] {
	return spec[map[string]any]{args: ref.appendArgs([]any{"MEM.GETATTR", coll}), parse: parseAttrs}
}

// GetAttr returns the attributes of the memory ref names (MEM.GETATTR),
// nil when it has none. JSON numbers come back as float64.
// Errors: ErrNoMemory, ErrNoCollection.
func (c *Client) GetAttr(ctx context.Context, coll string, ref Ref) (map[string]any, error) {
	return run(ctx, c.rdb, getAttrSpec(coll, ref))
}

func setPayloadSpec(coll string, ref Ref, payload []byte) spec[struct{}] {
	if payload == nil {
		payload = []byte{}
	}
	return spec[struct{}]{args: append(ref.appendArgs([]any{"MEM.SETPAYLOAD", coll}), payload), parse: parseOK}
}

// SetPayload replaces the payload of the memory ref names (MEM.SETPAYLOAD);
// nil sets an empty payload. The old bytes stay in the server's payload
// file, unreferenced, until it is compacted.
// Errors: ErrNoMemory, ErrPayloadTooLarge, ErrNoCollection.
func (c *Client) SetPayload(ctx context.Context, coll string, ref Ref, payload []byte) error {
	_, err := run(ctx, c.rdb, setPayloadSpec(coll, ref, payload))
	return err
}

func setVectorSpec(coll string, ref Ref, vec []float32) spec[struct{}] {
	return spec[struct{}]{args: append(ref.appendArgs([]any{"MEM.SETVECTOR", coll}), "FP32", EncodeFP32(vec)), parse: parseOK}
}

// SetVector replaces the vector of the memory ref names (MEM.SETVECTOR),
// keeping its id, key, attributes, payload, expiry, Q, visits and history.
// Errors: ErrNoMemory, ErrDimension, ErrNoCollection.
func (c *Client) SetVector(ctx context.Context, coll string, ref Ref, vec []float32) error {
	_, err := run(ctx, c.rdb, setVectorSpec(coll, ref, vec))
	return err
}

func expireSpec(coll string, ref Ref, ttl time.Duration) spec[struct{}] {
	s, err := seconds(ttl)
	return spec[struct{}]{
		args:  append(ref.appendArgs([]any{"MEM.EXPIRE", coll}), s),
		parse: func(v any) (struct{}, error) { _, err := parseInt(v); return struct{}{}, err },
		err:   err,
	}
}

// Expire sets the time to live of the memory ref names to ttl from now, in
// whole seconds, replacing any expiry it had (MEM.EXPIRE). A ttl of zero or
// less deletes the memory now. Errors: ErrNoMemory, ErrBadTTL.
func (c *Client) Expire(ctx context.Context, coll string, ref Ref, ttl time.Duration) error {
	_, err := run(ctx, c.rdb, expireSpec(coll, ref, ttl))
	return err
}

func persistSpec(coll string, ref Ref) spec[bool] {
	return spec[bool]{args: ref.appendArgs([]any{"MEM.PERSIST", coll}), parse: parseBool}
}

// Persist removes the expiry of the memory ref names (MEM.PERSIST) and
// reports whether it had one. Errors: ErrNoMemory.
func (c *Client) Persist(ctx context.Context, coll string, ref Ref) (bool, error) {
	return run(ctx, c.rdb, persistSpec(coll, ref))
}

// NoExpiry is what TTL returns for a memory that never expires.
const NoExpiry = time.Duration(-1)

func ttlSpec(coll string, ref Ref) spec[time.Duration] {
	return spec[time.Duration]{
		args: ref.appendArgs([]any{"MEM.TTL", coll}),
		parse: func(v any) (time.Duration, error) {
			s, err := parseInt(v)
			if err != nil || s < 0 {
				return NoExpiry, err
			}
			return time.Duration(s) * time.Second, nil
		},
	}
}

// TTL returns the time the memory ref names has left, rounded to the
// nearest second, or NoExpiry (MEM.TTL). Errors: ErrNoMemory.
func (c *Client) TTL(ctx context.Context, coll string, ref Ref) (time.Duration, error) {
	return run(ctx, c.rdb, ttlSpec(coll, ref))
}
