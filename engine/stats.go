package engine

import (
	"github.com/memrl/memrl/internal/histo"
	"github.com/memrl/memrl/wal"
)

// Read-only statistics for monitoring (INFO persistence, INFO keyspace,
// Prometheus). None of them waits for a write, an fsync or a checkpoint:
// each takes the locks it reads under for as long as it copies a few
// numbers.

// Dir returns the database's folder, as given to Open.
func (db *DB) Dir() string { return db.dir }

// WALStats returns the write-ahead log's counters: records, bytes and
// fsyncs since Open, segment files and their bytes now.
func (db *DB) WALStats() wal.Stats { return db.log.Stats() }

// WALSyncLatency copies the histogram of the log's fsync durations into
// s.
func (db *DB) WALSyncLatency(s *histo.Snapshot) { db.log.SyncLatency(s) }

// CollectionStats summarise one collection.
type CollectionStats struct {
	Name        string
	Dim         int
	Memories    int    // live memories
	DeadRows    uint64 // vector rows holding no live memory (deleted or replaced)
	Rows        uint32 // vector rows, live or dead
	Index       string // "flat", "ivfpq"; "flat+building" or "ivfpq+building" while an index is built (a retrain, for the latter)
	QMean       float64
	QStd        float64 // population standard deviation of Q
	MappedBytes int64   // bytes the vectors are read from: the vector file's mapping, or the resident copy's rows (Options.MapFiles)
	PayloadSize uint64  // bytes of the payload file in use (payloads and their checksums)
	DataBytes   int64   // what the collection's data holds in memory (DataMemory.Total)
}

// CollectionStats returns a summary of every collection, sorted by name.
// The Q figures come from the qtable's running sums (qtable.Table.QStats),
// so the cost does not grow with the number of memories and rewards are
// not held up.
func (db *DB) CollectionStats() []CollectionStats {
	var out []CollectionStats
	for _, name := range db.List() {
		c, err := db.Collection(name)
		if err != nil {
			continue // dropped meanwhile
		}
		if st, err := c.Stats(); err == nil {
			out = append(out, st)
		}
	}
	return out
}

// Stats returns the collection's summary. It holds the collection's lock
// for reading while it copies counts, as Info does.
func (c *Collection) Stats() (CollectionStats, error) {
	if err := c.rlockLive(); err != nil {
		return CollectionStats{}, err
	}
	st := CollectionStats{
		Name: c.name, Dim: c.cfg.Dim, Memories: len(c.mems), DeadRows: c.dead.GetCardinality(),
		Rows: c.vecs.nrows, Index: "flat", MappedBytes: c.vecs.heldBytes(), PayloadSize: c.pays.size,
		DataBytes: c.DataMemory().Total(),
	}
	if _, ok := c.index.(ivfPhase1); ok {
		st.Index = "ivfpq"
		if c.building {
			st.Index = "ivfpq+building"
		}
	} else if c.building {
		st.Index = "flat+building"
	}
	c.mu.RUnlock()
	q := c.q.QStats()
	st.QMean, st.QStd = q.Mean, q.Std
	return st, nil
}

// MappedBytes returns the bytes of every collection's vector file mapped
// into memory (what CollectionStats reports as MappedBytes, summed),
// without computing the rest of their statistics.
func (db *DB) MappedBytes() int64 {
	db.mu.RLock()
	colls := make([]*Collection, 0, len(db.colls))
	for _, c := range db.colls {
		colls = append(colls, c)
	}
	db.mu.RUnlock()
	var n int64
	for _, c := range colls {
		if c.rlockLive() == nil {
			n += c.vecs.heldBytes()
			c.mu.RUnlock()
		}
	}
	return n
}
