package engine

import (
	"fmt"
	"slices"

	"github.com/memrl/memrl/engine/filter"
	"github.com/memrl/memrl/engine/record"
)

// Indexed attribute fields.
//
// A collection may declare top-level attribute fields to index (Config.
// Indexed at create, IndexField later): for each, package filter keeps
// roaring bitmaps of the rows holding each value, so that a FILTER on them
// narrows phase 1 to the rows that can match before any vector is scored
// (retrieve_filter.go). The declared list is state like any other: logged
// (recIndexed, the whole list after the change) and checkpointed (version
// 5 and later). The bitmaps are not: they hold nothing the attributes do
// not, and are rebuilt from them when the collection opens (about half a
// second per million memories with attributes) and when a field is added.
//
// The records' bodies (recIndexed, recCreateIndexed: a create with
// Config.Indexed, one record so that a torn log tail cannot keep the
// collection without its fields) are package record's; the names in a
// list must be sorted and unique, which checkFieldList holds a decoded
// list to.
const (
	recIndexed       = record.TypeIndexed
	recCreateIndexed = record.TypeCreateIndexed
)

// MaxIndexedFields bounds the fields a collection indexes: each costs a
// bitmap per distinct value and work on every add and attribute change.
const MaxIndexedFields = 32

// indexedRec sets a collection's indexed fields.
type indexedRec struct {
	uid    uint64
	fields []string
}

func encodeIndexed(r indexedRec) []byte {
	return record.EncodeIndexed(record.Indexed{UID: r.uid, Fields: r.fields})
}

// appendFieldList appends the field list's layout (record.AppendFieldList),
// shared by recIndexed and checkpoints. REQUIRES: checkIndexed accepted
// fields.
func appendFieldList(b []byte, fields []string) []byte { return record.AppendFieldList(b, fields) }

func decodeFieldList(d *decoder) []string { return record.DecodeFieldList(d) }

// decodeIndexed decodes a recIndexed body (record.DecodeIndexed) and
// checks its names (checkFieldList).
func decodeIndexed(b []byte) (indexedRec, error) {
	x, err := record.DecodeIndexed(b)
	r := indexedRec{uid: x.UID, fields: x.Fields}
	if err != nil {
		return r, err
	}
	if err := checkFieldList(r.fields); err != nil {
		return r, err
	}
	return r, nil
}

// checkFieldList refuses a decoded list of indexed fields that checkIndexed
// would not have produced (invalid, unsorted or repeated names).
func checkFieldList(fields []string) error {
	norm, err := checkIndexed(fields)
	if err == nil && !slices.Equal(norm, fields) {
		err = fmt.Errorf("indexed fields %q are not sorted and unique", fields)
	}
	if err != nil {
		return fmt.Errorf("%w: %v", errBadRecord, err)
	}
	return nil
}

// checkIndexed validates a list of fields to index and returns it sorted,
// without duplicates. Names are those a filter selects with .name
// (letters, digits, '_', '-', at most 128 bytes), or paths into nested
// objects with such names joined by dots (meta.source); ErrBadParam
// otherwise.
func checkIndexed(fields []string) ([]string, error) {
	out := slices.Clone(fields)
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > MaxIndexedFields {
		return nil, fmt.Errorf("%w: %d indexed fields, at most %d", ErrBadParam, len(out), MaxIndexedFields)
	}
	for _, f := range out {
		if !filter.ValidFieldName(f) {
			return nil, fmt.Errorf("%w: %q cannot be indexed: a field name is 1 to 128 letters, digits, '_' or '-' (and '.' between the names of a path into nested objects)", ErrBadParam, f)
		}
	}
	return out, nil
}

// ckptConfig returns the configuration a checkpoint records: the
// collection's, with the fields indexed now.
func (c *Collection) ckptConfig() Config {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.ckptConfigLocked()
}

// ckptConfigLocked is ckptConfig with c.mu held (compaction's swap holds
// it for writing). REQUIRES: c.mu held.
func (c *Collection) ckptConfigLocked() Config {
	cfg := c.cfg
	cfg.Indexed = slices.Clone(c.indexed)
	return cfg
}

// IndexedFields returns the fields the collection indexes, sorted.
func (c *Collection) IndexedFields() ([]string, error) {
	if err := c.rlockLive(); err != nil {
		return nil, err
	}
	defer c.mu.RUnlock()
	return slices.Clone(c.indexed), nil
}

// IndexField starts (add) or stops indexing attribute field name, once the
// change is durable. Adding builds the field's bitmaps from every memory's
// attributes while holding the collection's write lock (writes and
// retrievals of this collection wait, some 0.5 s per million memories).
// Adding a field already indexed, or dropping one that is not, changes
// nothing and is not an error.
func (c *Collection) IndexField(name string, add bool) error {
	if err := c.lockLive(); err != nil {
		return err
	}
	fields := slices.Clone(c.indexed)
	if i := slices.Index(fields, name); add && i < 0 {
		fields = append(fields, name)
	} else if !add && i >= 0 {
		fields = slices.Delete(fields, i, i+1)
	} else {
		c.mu.Unlock()
		return nil
	}
	fields, err := checkIndexed(fields)
	if err != nil {
		c.mu.Unlock()
		return err
	}
	r := indexedRec{uid: c.uid, fields: fields}
	lsn, err := c.db.logFor(c.name, encodeIndexed(r))
	if err != nil {
		c.mu.Unlock()
		return err
	}
	c.applyIndexedLocked(r)
	c.mu.Unlock()
	return c.db.WaitDurable(Ticket(lsn))
}

// applyIndexedLocked sets the indexed fields, building the bitmaps of the
// fields added and dropping those of the fields removed. During recovery
// (fidx nil) it only records the list: rebuildFilterIndexLocked builds
// everything once replay is done.
// REQUIRES: c.mu held for writing (or recovery).
func (c *Collection) applyIndexedLocked(r indexedRec) {
	old := c.indexed
	c.indexed = slices.Clone(r.fields)
	if c.fidx == nil {
		return
	}
	defer c.accountLocked() // datamem.go
	for _, f := range old {
		if !slices.Contains(c.indexed, f) {
			c.fidx.RemoveField(f)
		}
	}
	for _, f := range c.indexed {
		if !slices.Contains(old, f) {
			c.fidx.AddField(f, c.eachAttrsLocked) // valid: checked by decodeIndexed/checkIndexed
		}
	}
}

// eachAttrsLocked yields the row and attributes of every memory that has
// attributes, for filter.Index.AddField.
// REQUIRES: c.mu held.
func (c *Collection) eachAttrsLocked(yield func(row uint32, attrs []byte)) {
	for _, m := range c.mems {
		if a := m.attrs(); len(a) > 0 {
			yield(m.row, a)
		}
	}
}

// rebuildFilterIndexLocked builds the attribute index from scratch for the
// declared fields: at the end of recovery, after which the apply functions
// keep it in step.
// REQUIRES: c.mu held for writing, or c not yet shared.
func (c *Collection) rebuildFilterIndexLocked() {
	c.fidx = filter.NewIndex()
	for _, f := range c.indexed {
		if err := c.fidx.AddField(f, c.eachAttrsLocked); err != nil {
			c.db.opts.Logf("memrl: collection %q: cannot index field %q: %v", c.name, f, err)
		}
	}
	c.attrBytes = 0
	c.eachAttrsLocked(func(_ uint32, attrs []byte) { c.attrBytes += attrCost(attrs) })
	c.accountLocked() // datamem.go
}

// filterIndexAddLocked and filterIndexRemoveLocked keep the attribute
// index, and the attributes' bytes counted in DataMemory (datamem.go), in
// step with a row's attributes (nothing during recovery, when fidx is
// nil: rebuildFilterIndexLocked counts them after). Every change of a
// memory's attributes goes through them. REQUIRES: c.mu held for writing.
func (c *Collection) filterIndexAddLocked(row uint32, attrs []byte) {
	if c.fidx == nil {
		return
	}
	c.attrBytes += attrCost(attrs)
	if len(attrs) > 0 && len(c.indexed) > 0 {
		c.fidx.Add(row, attrs)
	}
}

func (c *Collection) filterIndexRemoveLocked(row uint32, attrs []byte) {
	if c.fidx == nil {
		return
	}
	c.attrBytes -= attrCost(attrs)
	if len(attrs) > 0 && len(c.indexed) > 0 {
		c.fidx.Remove(row, attrs)
	}
}
