package engine

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/memrl/memrl/engine/histlog"
)

// History: each memory's recent updates (MEM.HISTORY), newest first.
//
// An entry is what a recQ record logs after an update: its time, the
// reward, Q after and the visit count. It is derived from the reward path
// only: Reward appends one per memory updated, and an ADD … DEDUP merge,
// which sets Q without a reward, appends one with the visit count (and
// last reward) unchanged. Replay rebuilds the entries of the records after
// the checkpoint the same way, so history needs no record of its own.
//
// A memory keeps at most Options.HistoryLen entries (the oldest is dropped
// to make room), in one byte slice (histLog below): about 12 bytes an
// entry and a few for its header, nothing for a memory never rewarded.
// The log is removed with the memory (removeHistory) and persisted in
// checkpoints as memory section memSectHistory.
//
// Idempotent replay. A checkpoint copies a memory's history while rewards
// go on, so the copy may hold entries of records at or after the
// checkpoint's log position, which replay applies again. Each log records
// the LSN of the record of its newest entry, and an entry is appended only
// for a record with a higher LSN (LSNs are totally ordered and survive
// restarts), so no entry is ever doubled.

// DefaultHistoryLen is the default of Options.HistoryLen.
const DefaultHistoryLen = 32

// MaxHistoryLen bounds Options.HistoryLen, and the entries a checkpoint's
// history section may hold.
const MaxHistoryLen = histlog.MaxLen

// ErrBadHistoryLen: Options.HistoryLen is at most MaxHistoryLen.
var ErrBadHistoryLen = errors.New("engine: Options.HistoryLen above MaxHistoryLen")

// HistoryEntry is one update of a memory's utility.
type HistoryEntry struct {
	Time   time.Time // when it was applied (millisecond precision)
	Reward float64   // the reward (for a DEDUP merge: the last reward, unchanged)
	Q      float64   // Q after the update
	Visits uint64    // visits after the update (a DEDUP merge leaves it unchanged)
}

// histStripes is the number of lock stripes of a collection's history.
// Fewer than the qtable's (256): the history lock is held for a few tens of
// nanoseconds under a qtable stripe's lock, and a collection's stripes cost
// 64 bytes each whether or not anything is rewarded.
const histStripes = 64

// history holds the logs of a collection's memories.
type history struct {
	stripes [histStripes]histStripe
}

type histStripe struct {
	// mu guards logs. Taken after the qtable stripe of the memory (lock
	// order: Collection.mu, qtable stripe, history stripe, WAL).
	mu   sync.Mutex
	logs map[uint64][]byte // id -> histLog bytes; nil until the first entry
	_    [48]byte          // pads a stripe to a cache line
}

func (h *history) stripe(id uint64) *histStripe {
	return &h.stripes[(id*0x9E3779B97F4A7C15)>>58] // 64 stripes: the top 6 bits
}

// historyLen returns the entries a memory keeps, 0 for none.
func (db *DB) historyLen() int {
	if db.opts.HistoryLen < 0 {
		return 0
	}
	if db.opts.HistoryLen == 0 {
		return DefaultHistoryLen
	}
	return db.opts.HistoryLen
}

// recordHistory appends the entry of r, logged at lsn, to its memory's
// log, unless the log already holds lsn (replay over a fuzzy checkpoint).
// REQUIRES: the qtable stripe of r.id held (the caller is a q.Update
// callback, or replay), so entries are appended in log order.
func (c *Collection) recordHistory(lsn uint64, r qRec) {
	max := c.db.historyLen()
	if max == 0 {
		return
	}
	s := c.hist.stripe(r.ID)
	s.mu.Lock()
	if s.logs == nil {
		s.logs = make(map[uint64][]byte)
	}
	b := s.logs[r.ID]
	if len(b) == 0 || histLSN(b) < lsn {
		nb := histlog.Push(b, lsn, histlog.Entry{MS: r.Updated / int64(time.Millisecond),
			Reward: r.LastReward, Q: r.Q, Visits: r.Visits}, max)
		s.logs[r.ID] = nb
		c.addAcct(kindHistory, int64(cap(nb)-cap(b))) // datamem.go
	}
	s.mu.Unlock()
}

// removeHistory drops memory id's history. Deletes call it (a snapshot
// that keeps a deleted memory as a ghost would not).
func (c *Collection) removeHistory(id uint64) {
	s := c.hist.stripe(id)
	s.mu.Lock()
	if b, ok := s.logs[id]; ok {
		c.addAcct(kindHistory, -int64(cap(b))) // datamem.go
		delete(s.logs, id)
	}
	s.mu.Unlock()
}

// historyBytes returns a copy of memory id's log, or nil.
func (c *Collection) historyBytes(id uint64) []byte {
	s := c.hist.stripe(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.logs[id]; len(b) > 0 {
		return append([]byte(nil), b...)
	}
	return nil
}

// History returns the latest count updates of the memory named by r,
// newest first (all it keeps, up to Options.HistoryLen, when count <= 0).
// A memory never rewarded has none: the result is empty, not an error.
// ErrNoMemory when r names no live memory.
func (c *Collection) History(r Ref, count int) ([]HistoryEntry, error) {
	if err := c.rlockLive(); err != nil {
		return nil, err
	}
	defer c.mu.RUnlock()
	id, _, err := c.resolveLocked(r, c.db.nowNanos())
	if err != nil {
		return nil, err
	}
	b := c.historyBytes(id)
	if b == nil {
		return []HistoryEntry{}, nil
	}
	es, _, err := decodeHistLog(b)
	if err != nil { // only logs that decode are ever stored: a bug
		return nil, fmt.Errorf("engine: history of memory %d: %w", id, err)
	}
	out := make([]HistoryEntry, 0, len(es))
	for i := len(es) - 1; i >= 0 && (count <= 0 || len(out) < count); i-- {
		e := es[i]
		out = append(out, HistoryEntry{Time: time.UnixMilli(e.MS), Reward: e.Reward, Q: e.Q, Visits: e.Visits})
	}
	return out, nil
}

// HistoryMemory reports what a collection's histories take: the memories
// that have one, their entries and the bytes of their logs (capacity
// included; the map's own overhead, about 40 bytes a memory, is not).
type HistoryMemory struct {
	Memories, Entries int
	Bytes             int64
}

// HistoryMemory measures the collection's histories.
func (c *Collection) HistoryMemory() HistoryMemory {
	var m HistoryMemory
	for i := range c.hist.stripes {
		s := &c.hist.stripes[i]
		s.mu.Lock()
		for _, b := range s.logs {
			m.Memories++
			m.Bytes += int64(cap(b))
			_, n, _ := histHeader(b)
			m.Entries += n
		}
		s.mu.Unlock()
	}
	return m
}

// The log's bytes, in memory and in a checkpoint's history section (memory
// tag memSectHistory), are package histlog's. These names keep the
// engine's code short.

func histHeader(b []byte) (hlen, n int, err error) { return histlog.Header(b) }
func histLSN(b []byte) uint64                      { return histlog.LSN(b) }
func histTrim(b []byte, max int) []byte            { return histlog.Trim(b, max) }
func decodeHistLog(b []byte) ([]histlog.Entry, uint64, error) {
	return histlog.Decode(b)
}

// historySection returns memory id's checkpoint section, if it has a
// history. REQUIRES: c.mu held for reading (memSectionsLocked).
func (c *Collection) historySection(id uint64) (ckptSection, bool) {
	s := c.hist.stripe(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.logs[id]
	if len(b) == 0 {
		return ckptSection{}, false
	}
	return ckptSection{Tag: memSectHistory, Data: histlog.Section(b)}, true
}

// checkHistorySection validates a checkpoint's history section.
func checkHistorySection(data []byte) error { return histlog.CheckSection(data) }

// loadHistoryLocked takes the histories of a checkpoint's memories: those
// of the copies loadCheckpointLocked kept (the one at the memory's row).
// REQUIRES: c not yet shared; the sections checked by decodeCkptMemory.
func (c *Collection) loadHistoryLocked(cc ckptCollection) {
	max := c.db.historyLen()
	for _, m := range cc.mems {
		if cur, ok := c.mems[m.id]; !ok || cur.row != m.m.row {
			continue
		}
		for _, s := range m.sections {
			if s.Tag != memSectHistory {
				continue
			}
			if max == 0 {
				continue
			}
			st := c.hist.stripe(m.id)
			if st.logs == nil {
				st.logs = make(map[uint64][]byte)
			}
			nb := histTrim(s.Data[1:], max) // s.data is the decoder's copy
			c.addAcct(kindHistory, int64(cap(nb)-cap(st.logs[m.id])))
			st.logs[m.id] = nb
		}
	}
}
