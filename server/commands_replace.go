package server

import "github.com/memrl/memrl/engine"

// MEM.SETVECTOR, the in-place vector replacement of engine/replace.go (its
// upsert form is MEM.ADD … KEY k REPLACE, parsed with the other add
// options in commands_attrs.go). See docs/PROTOCOL.md.

// MEM.SETVECTOR coll (id | KEY k) (FP32 blob | VALUES d v1 … vd)
//
// Gives the memory a new vector, keeping its id, key, attributes,
// payload, expiry, Q, visits and history. Replies +OK once durable.
func (m memCommands) setVector(c *Ctx, args [][]byte) error {
	coll, err := m.coll(args[0])
	if err != nil {
		return err
	}
	a := argList{args: args, i: 1}
	r, err := a.ref()
	if err != nil {
		return err
	}
	vec, err := a.vector()
	if err != nil {
		return err
	}
	if a.more() {
		return c.WrongArity()
	}
	_, ticket, err := coll.ReplaceDeferred(r, engine.ReplaceRequest{Vector: vec})
	if err != nil {
		return err
	}
	if err := c.AfterDurable(m.wait, uint64(ticket)); err != nil {
		return err
	}
	c.WriteOK()
	return nil
}
