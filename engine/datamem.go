package engine

import (
	"sync/atomic"

	"github.com/memrl/memrl/vfs"
)

// Data memory: what the database's data holds in memory, by kind, for
// INFO memory and the server's --maxmemory (issue 26: neither counted the
// vectors, indexes, attributes or history, so 4,096 small collections
// took 10.5 GB of RSS that INFO did not show and no limit stopped).
//
// Each collection keeps its figures in atomic counters and the database
// their sums, so that reading the total (the server does before every
// write that may grow data) costs a few atomic loads, whatever the number
// of collections. A collection refreshes its figures after each change
// under its write lock (accountLocked), from quantities it knows in O(1):
// no figure is found by walking memories. History changes under its own
// stripe locks and is counted there (history.go).
//
// The figures are estimates of the heap and resident memory held, not of
// RSS: they leave out the Go runtime's overheads, client buffers (the
// server's Budget), an index build's transient copies, and the page
// cache.

// DataMemory is the memory a collection's (or the database's) data holds,
// in bytes, by kind.
type DataMemory struct {
	// Vectors is the rows read by searches: the resident copy (its heap
	// allocation, or its huge pages in use), or the rows of the mapped
	// file (Options.MapFiles); and their checksums.
	Vectors int64
	// Records is the memories' records: the id map, row map, ordered ids
	// and Q table entries, estimated per memory (memoryRecordBytes), and a
	// collection's fixed structures (collectionBytes) and the Q table's
	// stripes (qtable.Table.StripeBytes), which grow with its entries.
	Records int64
	// Index is the IVF-PQ index (ivfpq.Index.Bytes).
	Index int64
	// Attrs is the attributes' compact JSON and the extension records
	// holding them (memExt).
	Attrs int64
	// AttrIndex is the index of the declared attribute fields
	// (filter.Index.SizeInBytes).
	AttrIndex int64
	// History is the memories' update histories.
	History int64
}

// Total is the sum of every kind.
func (m DataMemory) Total() int64 {
	return m.Vectors + m.Records + m.Index + m.Attrs + m.AttrIndex + m.History
}

// Estimates of what the engine's structures cost, measured with the heap
// profile of 100 collections of 300 memories each (16-d, IVF-PQ).
const (
	// memoryRecordBytes is what a memory costs beyond its vector,
	// payload, attributes and history: its entry in mems (about 85
	// bytes), in the qtable (about 170), in rowIDs and liveIDs.
	memoryRecordBytes = 270
	// collectionBytes is what a collection costs with no memories
	// besides its Q table's stripes: the Collection with the history's
	// 64 stripes (4 KiB), maps and bitmaps; 9 KiB of heap in all with an
	// empty Q table's, measured by TestSmallCollectionHeap.
	collectionBytes = 8 << 10
	// extBytes is a memExt besides its attributes' bytes.
	extBytes = 48
)

type memKind int

const (
	kindVectors memKind = iota
	kindRecords
	kindIndex
	kindAttrs
	kindAttrIndex
	kindHistory
	numKinds
)

// dataAcct holds figures by kind. Safe for concurrent use.
type dataAcct struct{ n [numKinds]atomic.Int64 }

func (a *dataAcct) read() DataMemory {
	return DataMemory{Vectors: a.n[kindVectors].Load(), Records: a.n[kindRecords].Load(),
		Index: a.n[kindIndex].Load(), Attrs: a.n[kindAttrs].Load(),
		AttrIndex: a.n[kindAttrIndex].Load(), History: a.n[kindHistory].Load()}
}

// DataMemory returns what the data of every open collection holds in
// memory. It costs a few atomic loads: the collections keep the sums up
// to date.
func (db *DB) DataMemory() DataMemory { return db.acct.read() }

// DataMemory returns what the collection's data holds in memory.
func (c *Collection) DataMemory() DataMemory { return c.acct.read() }

// setAcct sets the collection's figure of kind k to v, and moves the
// database's sum by the difference.
func (c *Collection) setAcct(k memKind, v int64) {
	if old := c.acct.n[k].Load(); old != v {
		c.addAcct(k, v-old)
	}
}

// addAcct changes the collection's figure of kind k, and the database's
// sum, by d.
func (c *Collection) addAcct(k memKind, d int64) {
	if d != 0 {
		c.acct.n[k].Add(d)
		c.db.acct.n[k].Add(d)
	}
}

// accountLocked refreshes the collection's figures after a change: each
// is known in O(1) (len, a counter, filter.Index.SizeInBytes,
// ivfpq.Index.Bytes), so every write calls it.
// REQUIRES: c.mu held for writing, or c not yet shared.
func (c *Collection) accountLocked() {
	if c.dropped {
		return // unaccountLocked took the figures out for good
	}
	if c.vecs != nil {
		c.setAcct(kindVectors, c.vecs.memBytes())
	}
	c.setAcct(kindRecords, recordBytes(c))
	var ix int64
	if c.ivf != nil {
		ix = c.ivf.Bytes()
	}
	c.setAcct(kindIndex, ix)
	c.setAcct(kindAttrs, c.attrBytes)
	var fb int64
	if c.fidx != nil && len(c.indexed) > 0 {
		fb = int64(c.fidx.SizeInBytes())
	}
	c.setAcct(kindAttrIndex, fb)
}

// recordBytes is the collection's DataMemory.Records.
// REQUIRES: c.mu held, or c not yet shared.
func recordBytes(c *Collection) int64 {
	return collectionBytes + c.q.StripeBytes() + int64(len(c.mems))*memoryRecordBytes
}

// unaccountLocked takes the collection's figures out of the database's
// sums: it is dropped or closed. REQUIRES: c.mu held for writing.
func (c *Collection) unaccountLocked() {
	for k := memKind(0); k < numKinds; k++ {
		c.db.acct.n[k].Add(-c.acct.n[k].Swap(0))
	}
}

// attrCost is what a memory's attributes count for in DataMemory.Attrs.
func attrCost(attrs []byte) int64 {
	if len(attrs) == 0 {
		return 0
	}
	return int64(len(attrs)) + extBytes
}

// memBytes is what the rows count for in DataMemory.Vectors: the resident
// copy's heap allocation, or the huge pages its rows in use touch, or the
// mapped rows in use; and the checksums.
func (s *vectorStore) memBytes() int64 {
	n := int64(s.nrows) * s.rowSize
	switch held := int64(cap(s.mem.b)); {
	case !s.resident || held == 0:
	case held >= vfs.HugePage: // huge pages: committed as the rows touch them
		n = (n + vfs.HugePage - 1) / vfs.HugePage * vfs.HugePage
	default: // the Go heap: all of it
		n = held
	}
	return n + int64(cap(s.sums))*8
}
