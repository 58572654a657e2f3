package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/memrl/memrl/engine/filter"
)

// Scans and counts.
//
// A scan reads a collection's memories a page at a time, in increasing id
// order, with a stateless cursor: the id to start from (0 starts). Each
// page returns the cursor of the next one, one above its last id, or 0 when
// no live id is left above it. Ids are stable (a memory keeps its id for
// its life, whereas rows move: compaction will rewrite them), so a memory
// live for the whole scan is returned exactly once, whatever is added or
// deleted between pages: it is in exactly one page's id range, and that
// page sees it. A memory added or deleted during the scan may or may not
// be returned; an id deleted and added again counts as added during it.
//
// The live ids are kept in order beside the memory table (Collection.
// liveIDs, an idSet: a roaring bitmap for ids below 2^32, a B-tree above),
// so a page costs O(page) plus finding the cursor (a skip over the
// bitmap's containers below it, one per 2^16 ids in use: 16 for the 1M
// ids of a collection filled by adds without ID; a binary search in the
// B-tree), not a sort of the collection.

// MaxScanCount bounds ScanOptions.Count: a page is held in memory whole
// (and read in steps under the collection's read lock: ScanContext).
const MaxScanCount = 1000

// ScanOptions say what a scan page holds.
type ScanOptions struct {
	Count       int  // most memories in the page, 1..MaxScanCount
	WithPayload bool // copy each memory's payload into MemoryInfo.Payload
	WithVector  bool // copy each memory's vector (as stored) into MemoryInfo.Vector
	// MaxBytes, when above 0, ends the page early once the payloads and
	// vectors copied into it reach MaxBytes, so that a page of large
	// payloads is bounded in memory. A page always holds at least one
	// memory when one is left, so a scan always progresses.
	MaxBytes int64
	// Filter, when not nil, keeps only the memories whose attributes match
	// it. A page then examines at most ScanFilterBudget live ids and
	// returns those that match, so a page may be short, or empty, before
	// the scan is complete: the cursor, not a short page, says when it is.
	Filter *filter.Expr
}

// ScanFilterBudget bounds the live ids one filtered scan page examines, so
// that a page of a filter matching little costs a bounded time (some tens
// of milliseconds for a simple filter, seconds for a few KiB of one; the
// read lock is held a step at a time, ScanContext).
const ScanFilterBudget = 64 * MaxScanCount

// Scan is ScanContext without a deadline.
func (c *Collection) Scan(cursor uint64, opt ScanOptions) ([]MemoryInfo, uint64, error) {
	return c.ScanContext(context.Background(), cursor, opt)
}

// ScanContext returns the page of live memories with ids at least cursor,
// in increasing id order, and the cursor of the next page: 0 when the scan
// is complete. Payload and Vector are set only when asked for. A memory
// whose row or payload fails its checksum fails the page with an error
// wrapping ErrCorrupt that names it, as Get does.
//
// A page is read in bounded steps (steps.go), releasing the collection's
// read lock between them, so that a page of an expensive filter holds
// writers off for a step, not for the page. A page is then a scan of its
// own in miniature: a memory live for the whole page is returned (or
// skipped by the filter) exactly once, each memory is read whole, and one
// added or deleted during the page may or may not be in it. When ctx is
// done before the page is, the page stops at the next step and the error
// wraps ctx.Err().
func (c *Collection) ScanContext(ctx context.Context, cursor uint64, opt ScanOptions) ([]MemoryInfo, uint64, error) {
	if opt.Count < 1 || opt.Count > MaxScanCount {
		return nil, 0, fmt.Errorf("%w: COUNT must be 1..%d, got %d", ErrBadParam, MaxScanCount, opt.Count)
	}
	if err := checkCtx(c, ctx); err != nil {
		return nil, 0, err
	}
	if err := c.rlockLive(); err != nil {
		return nil, 0, err
	}
	var (
		page    []MemoryInfo
		bytes   int64
		last    uint64
		more    bool
		paused  bool // the step ended: go on from resume after yielding
		resume  uint64
		readErr error
	)
	now := c.db.nowNanos()
	st := newStepper(ctx, c)
	examined := 0
	visit := func(id uint64) bool {
		if st.over() {
			paused, resume = true, id // id not examined yet
			return false
		}
		if opt.Filter != nil {
			if examined == ScanFilterBudget {
				more = true // go on from id in the next page
				return false
			}
			examined++
			if !opt.Filter.Match(c.mems[id].attrs()) {
				last = id // consumed: the next page starts above it
				return true
			}
		}
		if c.mems[id].expiredAt(now) {
			return true // gone to clients; the sweeper deletes it (expiry.go)
		}
		if len(page) == opt.Count || (opt.MaxBytes > 0 && bytes >= opt.MaxBytes) {
			more = true // a live id is left for the next page
			return false
		}
		mi, err := c.readLocked(id, opt.WithPayload, opt.WithVector)
		if err != nil {
			readErr = err
			return false
		}
		bytes += int64(len(mi.Payload)+len(mi.Attrs)) + 4*int64(len(mi.Vector))
		page = append(page, mi)
		last = id
		return true
	}
	c.liveIDs.ascend(cursor, visit)
	for paused && readErr == nil {
		if err := st.yieldLocked(); err != nil {
			return nil, 0, err
		}
		paused = false
		c.liveIDs.ascend(resume, visit)
	}
	c.mu.RUnlock()
	if readErr != nil {
		return nil, 0, readErr
	}
	next := uint64(0)
	if more {
		next = last + 1 // <= MaxID: a live id is above last
	}
	return page, next, nil
}

// readLocked returns memory id's information, with its payload and vector
// when asked for, each verified against its checksum.
// REQUIRES: c.mu held at least for reading; id is live.
func (c *Collection) readLocked(id uint64, withPayload, withVector bool) (MemoryInfo, error) {
	m := c.mems[id]
	e, _ := c.q.Get(id)
	mi := MemoryInfo{
		ID: id, Q: e.Q, Visits: e.Visits, LastReward: e.LastReward, MeanReward: e.MeanReward(),
		Created: time.Unix(0, m.created), Updated: time.Unix(0, e.Updated),
		Attrs: m.attrs(), Key: m.key(), // immutable (memExt): shared, not copied
	}
	if x := m.expires(); x != 0 {
		mi.Expires = time.Unix(0, x)
	}
	if withPayload {
		p, err := c.pays.get(id, m.payOff, m.payLen)
		if err != nil {
			return MemoryInfo{}, c.reportLocked(err)
		}
		mi.Payload = p
	}
	if withVector {
		if err := c.vecs.checkRow(m.row); err != nil {
			return MemoryInfo{}, c.reportLocked(fmt.Errorf("memory %d: %w", id, err))
		}
		mi.Vector = append([]float32(nil), c.vecs.row(m.row)...)
	}
	return mi, nil
}

// Count returns the number of live memories.
func (c *Collection) Count() (int, error) {
	if err := c.rlockLive(); err != nil {
		return 0, err
	}
	defer c.mu.RUnlock()
	n := len(c.mems)
	now := c.db.nowNanos()
	for _, x := range c.expiring {
		if now >= x {
			n-- // expired, not yet swept: gone to clients
		}
	}
	return n, nil
}

// PayloadSizes returns the payload length of each memory named, or -1 for
// an id that is not live, so that a caller can bound a reply before it
// reads the payloads.
func (c *Collection) PayloadSizes(ids []uint64) ([]int64, error) {
	if err := c.rlockLive(); err != nil {
		return nil, err
	}
	defer c.mu.RUnlock()
	now := c.db.nowNanos()
	sizes := make([]int64, len(ids))
	for i, id := range ids {
		sizes[i] = -1
		if m, ok := c.mems[id]; ok && !m.expiredAt(now) {
			sizes[i] = int64(m.payLen)
		}
	}
	return sizes, nil
}

// PayloadSizesRefs is PayloadSizes for memories named by id or key: it
// also returns the id each ref resolves to (meaningful where the size is
// not -1). An unknown key, like an id not live or expired, gets -1. The
// size counts the memory's attribute and key bytes besides its payload,
// so that a caller bounding a reply (MEM.MGET) counts them too.
func (c *Collection) PayloadSizesRefs(refs []Ref) ([]uint64, []int64, error) {
	if err := c.rlockLive(); err != nil {
		return nil, nil, err
	}
	defer c.mu.RUnlock()
	now := c.db.nowNanos()
	ids := make([]uint64, len(refs))
	sizes := make([]int64, len(refs))
	for i, r := range refs {
		sizes[i] = -1
		if id, m, err := c.resolveLocked(r, now); err == nil {
			ids[i], sizes[i] = id, int64(m.payLen)+int64(len(m.attrs())+len(m.key()))
		}
	}
	return ids, sizes, nil
}
