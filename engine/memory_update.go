package engine

import (
	"bytes"
	"fmt"

	"github.com/memrl/memrl/qtable"
)

// In-place updates of a memory: its attributes and its payload. Each is
// logged (recSetAttrs, recSetPayload), applied under the collection's lock
// like an add, and marks the memory dirty so that the next delta
// checkpoint copies it.

// SetAttrsDeferred replaces memory r's attributes with attrs (a JSON
// object, validated and stored compact; empty removes them) and returns
// the ticket to pass to DB.WaitDurable before acknowledging it.
func (c *Collection) SetAttrsDeferred(r Ref, attrs []byte) (Ticket, error) {
	a, err := validateAttrs(attrs)
	if err != nil {
		return 0, err
	}
	if err := c.lockLive(); err != nil {
		return 0, err
	}
	defer c.mu.Unlock()
	id, _, err := c.resolveLocked(r, c.db.nowNanos())
	if err != nil {
		return 0, err
	}
	rec := setAttrsRec{UID: c.uid, ID: id, Attrs: a}
	lsn, err := c.db.logFor(c.name, encodeSetAttrs(rec))
	if err != nil {
		return 0, err
	}
	c.applySetAttrsLocked(rec)
	return Ticket(lsn), nil
}

// SetAttrs is SetAttrsDeferred, returning once the change is durable.
func (c *Collection) SetAttrs(r Ref, attrs []byte) error {
	t, err := c.SetAttrsDeferred(r, attrs)
	if err != nil {
		return err
	}
	return c.db.WaitDurable(t)
}

// Attrs returns memory r's attributes (compact JSON), or nil when it has
// none. The slice is shared: the caller must not modify it.
func (c *Collection) Attrs(r Ref) ([]byte, error) {
	if err := c.rlockLive(); err != nil {
		return nil, err
	}
	defer c.mu.RUnlock()
	_, m, err := c.resolveLocked(r, c.db.nowNanos())
	if err != nil {
		return nil, err
	}
	return m.attrs(), nil
}

// applySetAttrsLocked applies a logged attribute change; replay calls it
// for memories that may since have been deleted (then it does nothing).
// REQUIRES: c.mu held for writing.
func (c *Collection) applySetAttrsLocked(r setAttrsRec) {
	m, ok := c.mems[r.ID]
	if !ok {
		return
	}
	c.filterIndexRemoveLocked(m.row, m.attrs())
	// Replay's attributes alias the log's buffer: keep a copy.
	m.ext = makeExt(bytes.Clone(r.Attrs), m.key(), m.expires())
	c.mems[r.ID] = m
	c.filterIndexAddLocked(m.row, m.attrs())
	c.accountLocked() // datamem.go
	c.markDirtyLocked(r.ID)
}

// SetPayloadDeferred replaces memory r's payload with p and returns the
// ticket to wait for. The new payload is appended to the payload file;
// the old bytes stay there, unreferenced, until the file is compacted.
func (c *Collection) SetPayloadDeferred(r Ref, p []byte) (Ticket, error) {
	if len(p) > MaxPayload {
		return 0, fmt.Errorf("%w: %d bytes, the limit is %d", ErrPayloadTooLarge, len(p), MaxPayload)
	}
	if err := c.lockLive(); err != nil {
		return 0, err
	}
	defer c.mu.Unlock()
	id, _, err := c.resolveLocked(r, c.db.nowNanos())
	if err != nil {
		return 0, err
	}
	rec := setPayloadRec{UID: c.uid, ID: id, PayOff: c.pays.size, Payload: p}
	// Written before it is logged, as an add's files are, so that a full
	// disk fails the command cleanly; the bytes are derived data.
	if err := c.pays.put(id, rec.PayOff, p); err != nil {
		c.pays.size = min(c.pays.size, rec.PayOff)
		return 0, err
	}
	lsn, err := c.db.logFor(c.name, encodeSetPayload(rec))
	if err != nil {
		c.pays.size = min(c.pays.size, rec.PayOff)
		return 0, err
	}
	c.applySetPayloadLocked(rec)
	return Ticket(lsn), nil
}

// SetPayload is SetPayloadDeferred, returning once the change is durable.
func (c *Collection) SetPayload(r Ref, p []byte) error {
	t, err := c.SetPayloadDeferred(r, p)
	if err != nil {
		return err
	}
	return c.db.WaitDurable(t)
}

// applySetPayloadLocked points the memory at its new payload (the file
// holds it already); replay calls it for memories that may since have
// been deleted (then it does nothing).
// REQUIRES: c.mu held for writing.
func (c *Collection) applySetPayloadLocked(r setPayloadRec) {
	m, ok := c.mems[r.ID]
	if !ok {
		return
	}
	m.payOff, m.payLen = r.PayOff, uint32(len(r.Payload))
	c.mems[r.ID] = m
	c.markDirtyLocked(r.ID)
}

// markDirtyLocked marks memory id for the next delta checkpoint, as a
// change of Q does: deltas copy the memories whose qtable entries are
// dirty, whole. REQUIRES: c.mu held for writing.
func (c *Collection) markDirtyLocked(id uint64) {
	c.q.Update(id, func(*qtable.Entry) error { return nil })
}
