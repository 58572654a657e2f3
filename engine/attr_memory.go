package engine

// AttrMemory is what a collection's attributes and their index hold in
// memory, for benchmarks and capacity planning (Collection.AttrMemory).
type AttrMemory struct {
	// Memories is the number of live memories that carry attributes.
	Memories int
	// AttrBytes is the attributes' compact JSON text, summed over those
	// memories: what the attributes themselves hold, without the
	// per-memory extension record that points at them.
	AttrBytes uint64
	// IndexBytes is filter.Index.SizeInBytes of the indexed fields'
	// bitmaps: their serialized sizes plus an estimate per posting (0
	// without indexed fields).
	IndexBytes uint64
}

// AttrMemory measures the collection's attributes and attribute index. It
// walks every memory under the read lock, so it costs O(memories): call it
// for a report, not on a hot path (Info stays O(1) for that reason).
func (c *Collection) AttrMemory() (AttrMemory, error) {
	if err := c.rlockLive(); err != nil {
		return AttrMemory{}, err
	}
	defer c.mu.RUnlock()
	var am AttrMemory
	for _, m := range c.mems {
		if a := m.attrs(); len(a) > 0 {
			am.Memories++
			am.AttrBytes += uint64(len(a))
		}
	}
	if c.fidx != nil && len(c.indexed) > 0 {
		am.IndexBytes = c.fidx.SizeInBytes()
	}
	return am, nil
}
