package engine

import "fmt"

// Payload returns memory id's payload, read from the payload file. A
// server streaming many payloads reads them one at a time with it (after a
// Retrieve without WithPayload), so that it never holds more than one.
// It returns an error wrapping ErrNoMemory if id is not (or no longer) in
// the collection.
func (c *Collection) Payload(id uint64) ([]byte, error) {
	if err := c.rlockLive(); err != nil {
		return nil, err
	}
	defer c.mu.RUnlock()
	m, ok := c.mems[id]
	if !ok {
		return nil, fmt.Errorf("%w: %d", ErrNoMemory, id)
	}
	p, err := c.pays.get(id, m.payOff, m.payLen)
	if err != nil {
		return nil, c.reportLocked(err)
	}
	return p, nil
}
