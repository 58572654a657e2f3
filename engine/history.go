package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
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
const MaxHistoryLen = 1024

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
	s := c.hist.stripe(r.id)
	s.mu.Lock()
	if s.logs == nil {
		s.logs = make(map[uint64][]byte)
	}
	b := s.logs[r.id]
	if len(b) == 0 || histLSN(b) < lsn {
		nb := histPush(b, lsn, histEntry{ms: r.updated / int64(time.Millisecond),
			reward: r.lastReward, q: r.q, visits: r.visits}, max)
		s.logs[r.id] = nb
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
		out = append(out, HistoryEntry{Time: time.UnixMilli(e.ms), Reward: e.reward, Q: e.q, Visits: e.visits})
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

// Checkpoint section (memory tag memSectHistory):
//
//	version u8 = 1 | histLog
//
// histLog, the same bytes as in memory:
//
//	header:  lsn uvarint | n uvarint (1..MaxHistoryLen) | ms zigzag varint | visits uvarint
//	entries: n × (dms zigzag varint | dvisits zigzag varint | reward | q f64)
//	reward:  kind u8: 0..250 the integer kind-125; 0xFE f32 follows; 0xFF f64 follows
//
// Entries are oldest first. The header holds the LSN of the newest entry's
// record and its time (unix milliseconds) and visits; each entry holds
// the differences of its time and visits from the entry before it (the
// oldest's are unused: dropping it needs no rewrite of its successor), so
// absolute values are recovered from the newest backwards. Integer rewards
// (the common 0, 1, -1) take one byte. The checkpoint's checksum covers
// the section; a section that does not decode exactly is damage.
const histSectionVersion = 1

// histEntry is one decoded entry.
type histEntry struct {
	ms     int64
	reward float64
	q      float64
	visits uint64
}

const (
	rewardF32 = 0xFE
	rewardF64 = 0xFF
	rewardInt = 125 // kinds 0..250 hold the integers -125..125
)

func zigzag(v int64) uint64   { return uint64(v<<1) ^ uint64(v>>63) }
func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// appendHistEntry appends an entry with the given differences.
func appendHistEntry(b []byte, dms int64, dvisits int64, reward, q float64) []byte {
	b = binary.AppendUvarint(b, zigzag(dms))
	b = binary.AppendUvarint(b, zigzag(dvisits))
	switch {
	case reward == math.Trunc(reward) && math.Abs(reward) <= rewardInt && (reward != 0 || !math.Signbit(reward)):
		b = append(b, byte(int(reward)+rewardInt)) // -0 takes the f32 form: kept exactly
	case float64(float32(reward)) == reward:
		b = append(b, rewardF32)
		b = le.AppendUint32(b, math.Float32bits(float32(reward)))
	default:
		b = append(b, rewardF64)
		b = putF64(b, reward)
	}
	return putF64(b, q)
}

func appendHistHeader(b []byte, lsn uint64, n int, ms int64, visits uint64) []byte {
	b = binary.AppendUvarint(b, lsn)
	b = binary.AppendUvarint(b, uint64(n))
	b = binary.AppendUvarint(b, zigzag(ms))
	return binary.AppendUvarint(b, visits)
}

// histHeader decodes a log's header: it returns the header's length and
// n, or an error. Only the length and n are needed by most callers.
func histHeader(b []byte) (hlen, n int, err error) {
	d := histDecoder{b: b}
	d.uvarint() // lsn
	nn := d.uvarint()
	d.uvarint() // ms
	d.uvarint() // visits
	if d.err != nil {
		return 0, 0, d.err
	}
	if nn == 0 || nn > MaxHistoryLen {
		return 0, 0, fmt.Errorf("history of %d entries", nn)
	}
	return d.off, int(nn), nil
}

// histLSN returns the LSN in a log's header. REQUIRES: b a valid log.
func histLSN(b []byte) uint64 {
	lsn, _ := binary.Uvarint(b)
	return lsn
}

// histPush appends e, of the record at lsn, to log b (nil for none),
// dropping the oldest entries beyond max, and returns the log. It reuses
// b's array when it has room: the caller must hold the only reference.
// REQUIRES: b nil or a valid log; max >= 1.
func histPush(b []byte, lsn uint64, e histEntry, max int) []byte {
	var scratch [64]byte
	if len(b) == 0 {
		out := make([]byte, 0, 32) // a first entry of an integer reward fits
		out = appendHistHeader(out, lsn, 1, e.ms, e.visits)
		return appendHistEntry(out, 0, 0, e.reward, e.q)
	}
	d := histDecoder{b: b}
	d.uvarint()
	n := int(d.uvarint())
	ms := unzigzag(d.uvarint())
	visits := d.uvarint()
	body := b[d.off:]
	for ; n >= max; n-- { // drop the oldest
		body = body[histEntryLen(body):]
	}
	ent := appendHistEntry(scratch[:0], e.ms-ms, int64(e.visits-visits), e.reward, e.q)
	var hdr [4 * binary.MaxVarintLen64]byte
	h := appendHistHeader(hdr[:0], lsn, n+1, e.ms, e.visits)
	total := len(h) + len(body) + len(ent)
	if cap(b) < total {
		out := make([]byte, total, total+total/4)
		copy(out, h)
		copy(out[len(h):], body)
		copy(out[len(h)+len(body):], ent)
		return out
	}
	b = b[:cap(b)]
	copy(b[len(h):], body) // memmove: body aliases b
	copy(b, h)
	copy(b[len(h)+len(body):], ent)
	return b[:total]
}

// histEntryLen returns the length of the entry at the start of b.
// REQUIRES: b starts with a valid entry.
func histEntryLen(b []byte) int {
	d := histDecoder{b: b}
	d.entry()
	return d.off
}

// histTrim drops the oldest entries of a valid log beyond max, returning
// a log that may share b's array.
func histTrim(b []byte, max int) []byte {
	d := histDecoder{b: b}
	lsn := d.uvarint()
	n := int(d.uvarint())
	ms := unzigzag(d.uvarint())
	visits := d.uvarint()
	if n <= max {
		return b
	}
	body := b[d.off:]
	for ; n > max; n-- {
		body = body[histEntryLen(body):]
	}
	return append(appendHistHeader(nil, lsn, n, ms, visits), body...)
}

// decodeHistLog decodes a log strictly: every varint and kind valid, no
// byte left over, no visit count below zero. It returns the entries oldest
// first and the header's LSN.
func decodeHistLog(b []byte) ([]histEntry, uint64, error) {
	d := histDecoder{b: b}
	lsn := d.uvarint()
	n := d.uvarint()
	ms := unzigzag(d.uvarint())
	visits := d.uvarint()
	if d.err != nil {
		return nil, 0, d.err
	}
	if n == 0 || n > MaxHistoryLen {
		return nil, 0, fmt.Errorf("history of %d entries", n)
	}
	type diff struct{ dms, dv int64 }
	es := make([]histEntry, n)
	ds := make([]diff, n)
	for i := range es {
		ds[i].dms, ds[i].dv, es[i].reward, es[i].q = d.entry()
	}
	if d.err != nil {
		return nil, 0, d.err
	}
	if d.off != len(b) {
		return nil, 0, fmt.Errorf("%d bytes past the last history entry", len(b)-d.off)
	}
	for i := len(es) - 1; i >= 0; i-- {
		es[i].ms, es[i].visits = ms, visits
		if i > 0 {
			// Visits only grow today, but a rollback may lower them:
			// any difference is allowed that does not wrap.
			prev := visits - uint64(ds[i].dv)
			if (ds[i].dv > 0) != (prev < visits) {
				return nil, 0, fmt.Errorf("history entry %d: visits %d less %d wrap", i, visits, ds[i].dv)
			}
			ms -= ds[i].dms
			visits = prev
		}
	}
	return es, lsn, nil
}

// histDecoder reads a log, keeping the first error and its offset.
type histDecoder struct {
	b   []byte
	off int
	err error
}

func (d *histDecoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.err = fmt.Errorf("bad varint at history byte %d", d.off)
		return 0
	}
	d.off += n
	return v
}

func (d *histDecoder) fixed(n int) []byte {
	if d.err != nil {
		return make([]byte, 8)
	}
	if len(d.b)-d.off < n {
		d.err = fmt.Errorf("history cut short at byte %d", d.off)
		return make([]byte, 8)
	}
	p := d.b[d.off : d.off+n]
	d.off += n
	return p
}

func (d *histDecoder) entry() (dms, dv int64, reward, q float64) {
	dms = unzigzag(d.uvarint())
	dv = unzigzag(d.uvarint())
	switch k := d.fixed(1)[0]; {
	case k <= 2*rewardInt:
		reward = float64(int(k) - rewardInt)
	case k == rewardF32:
		reward = float64(math.Float32frombits(le.Uint32(d.fixed(4))))
	case k == rewardF64:
		reward = math.Float64frombits(le.Uint64(d.fixed(8)))
	default:
		if d.err == nil {
			d.err = fmt.Errorf("bad reward kind %d at history byte %d", k, d.off-1)
		}
	}
	q = math.Float64frombits(le.Uint64(d.fixed(8)))
	// Rewards and Q are finite (MEM.REWARD refuses others, and the update
	// keeps them so): a NaN or an infinity is damage.
	if d.err == nil && (!finite(reward) || !finite(q)) {
		d.err = fmt.Errorf("history entry before byte %d: reward %v, q %v: not finite", d.off, reward, q)
	}
	return
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
	data := make([]byte, 1+len(b))
	data[0] = histSectionVersion
	copy(data[1:], b)
	return ckptSection{tag: memSectHistory, data: data}, true
}

// checkHistorySection validates a checkpoint's history section.
func checkHistorySection(data []byte) error {
	if len(data) == 0 || data[0] != histSectionVersion {
		v := -1
		if len(data) > 0 {
			v = int(data[0])
		}
		return fmt.Errorf("history section version %d, this build reads %d", v, histSectionVersion)
	}
	_, _, err := decodeHistLog(data[1:])
	return err
}

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
			if s.tag != memSectHistory {
				continue
			}
			if max == 0 {
				continue
			}
			st := c.hist.stripe(m.id)
			if st.logs == nil {
				st.logs = make(map[uint64][]byte)
			}
			nb := histTrim(s.data[1:], max) // s.data is the decoder's copy
			c.addAcct(kindHistory, int64(cap(nb)-cap(st.logs[m.id])))
			st.logs[m.id] = nb
		}
	}
}
