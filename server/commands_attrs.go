package server

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/memrl/memrl/engine"
)

// The data-model commands of issue 9 that are not options of the older
// ones: attributes (MEM.SETATTR, MEM.GETATTR), in-place payload updates
// (MEM.SETPAYLOAD) and expiry (MEM.EXPIRE, MEM.PERSIST, MEM.TTL). Every
// one names its memory by id or by KEY k (parseRef); see docs/PROTOCOL.md.

// registerAttrs adds them; RegisterMem calls it.
func (s *Server) registerAttrs(m memCommands) {
	s.Register("MEM.SETATTR", 3, m.setAttr)
	s.Register("MEM.GETATTR", 2, m.getAttr, ReadOnly)
	s.Register("MEM.SETPAYLOAD", 3, m.setPayload)
	s.Register("MEM.SETVECTOR", 3, m.setVector) // commands_replace.go
	s.Register("MEM.EXPIRE", 3, m.expire)
	s.Register("MEM.PERSIST", 2, m.persist)
	s.Register("MEM.TTL", 2, m.ttl, ReadOnly)
}

// ref parses a memory reference: an id, or the keyword KEY and a key
// (1 to engine.MaxKeyLen bytes). Ids are numbers, so "KEY" is never one.
func (a *argList) ref() (engine.Ref, error) {
	b, err := a.next("memory id or KEY")
	if err != nil {
		return engine.Ref{}, err
	}
	if !strings.EqualFold(string(b), "KEY") {
		id, err := parseID(b, "memory id")
		return engine.ByID(id), err
	}
	k, err := a.next("key after KEY")
	if err != nil {
		return engine.Ref{}, err
	}
	return parseKey(k)
}

// parseKey checks a key argument; it is copied (args alias the read
// buffer).
func parseKey(k []byte) (engine.Ref, error) {
	if len(k) == 0 || len(k) > engine.MaxKeyLen {
		return engine.Ref{}, fmt.Errorf("%w: got %d bytes", engine.ErrBadKey, len(k))
	}
	return engine.ByKey(string(k)), nil
}

// refArgs parses the command's single memory reference from args[1:]
// and checks that exactly extra arguments follow it; it returns them.
func refArgs(c *Ctx, args [][]byte, extra int) (engine.Ref, [][]byte, error) {
	a := argList{args: args, i: 1}
	r, err := a.ref()
	if err != nil {
		return r, nil, err
	}
	if len(args)-a.i != extra {
		return r, nil, c.WrongArity()
	}
	return r, args[a.i:], nil
}

// MEM.SETATTR coll (id | KEY k) json
func (m memCommands) setAttr(c *Ctx, args [][]byte) error {
	coll, err := m.coll(args[0])
	if err != nil {
		return err
	}
	r, rest, err := refArgs(c, args, 1)
	if err != nil {
		return err
	}
	ticket, err := coll.SetAttrsDeferred(r, rest[0])
	if err != nil {
		return err
	}
	if err := c.AfterDurable(m.wait, uint64(ticket)); err != nil {
		return err
	}
	c.WriteOK()
	return nil
}

// MEM.GETATTR coll (id | KEY k)
func (m memCommands) getAttr(c *Ctx, args [][]byte) error {
	coll, err := m.coll(args[0])
	if err != nil {
		return err
	}
	r, _, err := refArgs(c, args, 0)
	if err != nil {
		return err
	}
	attrs, err := coll.Attrs(r)
	if err != nil {
		return err
	}
	writeBulkOrNull(c, attrs)
	return nil
}

// writeBulkOrNull writes b, or a null bulk string when b is nil.
func writeBulkOrNull(c *Ctx, b []byte) {
	if b == nil {
		c.WriteNull()
		return
	}
	c.WriteBulk(b)
}

// writeKeyOrNull writes key, or a null bulk string when it is empty.
func writeKeyOrNull(c *Ctx, key string) {
	if key == "" {
		c.WriteNull()
		return
	}
	c.WriteBulkString(key)
}

// MEM.SETPAYLOAD coll (id | KEY k) bytes
func (m memCommands) setPayload(c *Ctx, args [][]byte) error {
	coll, err := m.coll(args[0])
	if err != nil {
		return err
	}
	r, rest, err := refArgs(c, args, 1)
	if err != nil {
		return err
	}
	// The engine writes the bytes to the payload file before it returns
	// and keeps no reference, so the read buffer needs no copy.
	ticket, err := coll.SetPayloadDeferred(r, rest[0])
	if err != nil {
		return err
	}
	if err := c.AfterDurable(m.wait, uint64(ticket)); err != nil {
		return err
	}
	c.WriteOK()
	return nil
}

// maxTTLSeconds is engine.MaxTTL in whole seconds.
const maxTTLSeconds = int64(engine.MaxTTL / time.Second)

// parseTTL parses a TTL in whole seconds: a (signed) integer of at most
// maxTTLSeconds. Whether zero and negative values are allowed is the
// caller's rule.
func parseTTL(b []byte) (time.Duration, error) {
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("TTL must be an integer number of seconds, got %q", b)
	}
	if n > maxTTLSeconds {
		return 0, fmt.Errorf("TTL must be at most %d seconds (about 100 years), got %d", maxTTLSeconds, n)
	}
	if n < 0 {
		return -1, nil // negative: any value below zero means the same
	}
	return time.Duration(n) * time.Second, nil
}

// MEM.EXPIRE coll (id | KEY k) seconds
//
// As Redis's EXPIRE: a positive TTL replaces any expiry the memory had;
// zero or a negative TTL deletes the memory now (logged as a delete).
func (m memCommands) expire(c *Ctx, args [][]byte) error {
	coll, err := m.coll(args[0])
	if err != nil {
		return err
	}
	r, rest, err := refArgs(c, args, 1)
	if err != nil {
		return err
	}
	ttl, err := parseTTL(rest[0])
	if err != nil {
		return err
	}
	ticket, err := coll.ExpireDeferred(r, ttl)
	if err != nil {
		return err
	}
	if err := c.AfterDurable(m.wait, uint64(ticket)); err != nil {
		return err
	}
	c.WriteInt(1)
	return nil
}

// MEM.PERSIST coll (id | KEY k): 1 if an expiry was removed, 0 if the
// memory had none.
func (m memCommands) persist(c *Ctx, args [][]byte) error {
	coll, err := m.coll(args[0])
	if err != nil {
		return err
	}
	r, _, err := refArgs(c, args, 0)
	if err != nil {
		return err
	}
	had, ticket, err := coll.PersistDeferred(r)
	if err != nil {
		return err
	}
	if err := c.AfterDurable(m.wait, uint64(ticket)); err != nil {
		return err
	}
	if had {
		c.WriteInt(1)
	} else {
		c.WriteInt(0)
	}
	return nil
}

// MEM.TTL coll (id | KEY k): seconds left (rounded to the nearest, as
// Redis's TTL), or -1 when the memory never expires.
func (m memCommands) ttl(c *Ctx, args [][]byte) error {
	coll, err := m.coll(args[0])
	if err != nil {
		return err
	}
	r, _, err := refArgs(c, args, 0)
	if err != nil {
		return err
	}
	d, ok, err := coll.TTL(r)
	if err != nil {
		return err
	}
	if !ok {
		c.WriteInt(-1)
		return nil
	}
	c.WriteInt(int64(math.Round(d.Seconds())))
	return nil
}

// parseAddExt parses MEM.ADD's options of the data model (ATTRS, KEY,
// TTL) into req; it reports false for a keyword that is not one of them.
func (a *argList) parseAddExt(k string, req *engine.AddRequest) (bool, error) {
	switch k {
	case "ATTRS":
		b, err := a.next("ATTRS")
		req.Attrs = bytes.Clone(b) // args alias the read buffer
		return true, err
	case "KEY":
		b, err := a.next("KEY")
		if err != nil {
			return true, err
		}
		r, err := parseKey(b)
		req.Key = r.Key
		return true, err
	case "TTL":
		b, err := a.next("TTL")
		if err != nil {
			return true, err
		}
		ttl, err := parseTTL(b)
		if err == nil && ttl <= 0 {
			err = fmt.Errorf("TTL must be a positive number of seconds, got %q", b)
		}
		req.TTL = ttl
		return true, err
	case "REPLACE":
		// An upsert by KEY (engine/replace.go): the memory holding the
		// key gets the new vector, attributes and payload in place.
		req.Replace = true
		return true, nil
	}
	return false, nil
}
