package engine

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/memrl/memrl/ivfpq"
	"github.com/memrl/memrl/qtable"
)

// Compaction rewrites a collection's vector, checksum and payload files,
// and its IVF-PQ lists, holding only the rows of live memories and of
// those a snapshot still needs (forEachPinnedLocked), then swaps them in
// and frees the old ones. engine/doc.go ("Compaction") states the
// protocol and its crash cases.

// ErrCompacting: a collection runs at most one compaction at a time.
var ErrCompacting = errors.New("a compaction of this collection is already running")

// errCompacted ends an index build whose rows a compaction moved
// (index.go): it is built again on the new rows.
var errCompacted = errors.New("collection compacted during the index build")

// compactState is a collection's compaction state.
// Guarded by Collection.mu.
type compactState struct {
	running bool // a compaction is running
	// buildGen is c.gen when the running index build started: a build
	// that ends in another generation indexed rows that moved.
	buildGen uint64
	last     CompactStats // of the last compaction that finished
	hasLast  bool
	// remapped is set by recovery when it replayed a remap marker
	// (remap.go): the disk's checkpoint names the generation before, whose
	// files stay until a checkpoint names this one.
	remapped bool
}

// CompactStats describes a finished compaction.
type CompactStats struct {
	RowsBefore, RowsAfter   uint32 // rows of the vector file
	BytesBefore, BytesAfter int64  // DiskBytes before and after
	Took                    time.Duration
	// Stall is how long the collection's write lock was held for the
	// swap: how long its readers and rewards waited.
	Stall time.Duration
	// WriteStall is how long the collection's writers waited: the tail
	// copy and the swap, until the remap marker was logged (writeGate).
	WriteStall time.Duration
}

// keptRow is one row of the new generation: memory id's vector, copied
// from row old, and its payload of payLen bytes copied from oldOff to
// newOff.
type keptRow struct {
	id             uint64
	old            uint32
	payLen         uint32
	oldOff, newOff uint64
}

// nextGen is a generation being written. Its stores are private to the
// compaction until the swap, so they are written without the
// collection's lock.
type nextGen struct {
	c    *Collection
	gen  uint64
	vecs *vectorStore
	pays *payloadStore
	kept []keptRow // by new row
	// ix is the collection's index ixFrom remapped to the rows copyFrozen
	// kept (its first ixRows rows), made before the swap (remapIndex), or
	// nil.
	ix     *ivfpq.Index
	ixFrom *ivfpq.Index
	ixRows uint32
}

// Compact rewrites the collection's files without its deleted rows and
// returns once the new files are in use and the old ones removed. If that
// would free nothing (every dead row pinned by a snapshot, no payload
// garbage), it returns at once, having changed nothing, with stats whose
// figures after equal those before.
// Adds, rewards, deletes and retrievals go on meanwhile, except during the
// swap (CompactStats.Stall) and, for the writers (adds, deletes,
// updates), the tail copy (CompactStats.WriteStall); the checkpoint that
// commits the new generation follows its remap marker, with the writers
// going on. It fails with ErrCompacting if a compaction is running, and
// leaves the collection as it was on any error before the marker is
// logged; after it (the checkpoint failed), the new generation stays in
// use, holding the same memories, and the old files stay until a restart.
func (c *Collection) Compact() (CompactStats, error) {
	if err := c.startCompact(); err != nil {
		return CompactStats{}, err
	}
	return c.runCompact()
}

// CompactAsync starts Compact in the background and returns once it is
// started (ErrCompacting if one is running). Failures are logged.
func (c *Collection) CompactAsync() error {
	if err := c.startCompact(); err != nil {
		return err
	}
	go func() {
		if _, err := c.runCompact(); err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, ErrNoCollection) {
			c.db.opts.Logf("memrl: collection %q: compaction failed: %v", c.name, err)
		}
	}()
	return nil
}

// startCompact claims the collection's compaction and counts it in
// db.compacts, which Close waits for. REQUIRES: no lock held.
func (c *Collection) startCompact() error {
	db := c.db
	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.closed || db.closing {
		return ErrClosed
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.dropped:
		return fmt.Errorf("%w: %q", ErrNoCollection, c.name)
	case c.cs.running:
		return fmt.Errorf("%w: %q", ErrCompacting, c.name)
	}
	c.cs.running = true
	db.compacts.Add(1)
	return nil
}

// Compacting reports whether a compaction of the collection is running.
func (c *Collection) Compacting() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.cs.running
}

// LastCompaction returns the stats of the last compaction that finished
// since Open, and whether there was one.
func (c *Collection) LastCompaction() (CompactStats, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.cs.last, c.cs.hasLast
}

// DeletedRows returns the rows of the vector file that a compaction would
// reclaim: rows holding no live memory, less those snapshots pin
// (PinnedRows). It costs a pass over the pinned memories.
func (c *Collection) DeletedRows() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.reclaimableRowsLocked()
}

// PinnedRows returns the rows of the vector file that hold no live memory
// but that snapshots pin (deleted memories a rollback would bring back):
// a compaction copies them instead of freeing them.
func (c *Collection) PinnedRows() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.pinnedRowsLocked()
}

// DiskBytes returns the bytes of the collection's current files: the rows
// in use of the vector and checksum files, the payload bytes in use
// (garbage included: replaced and deleted payloads stay until compaction),
// and the saved index file. Old generations still being removed are not
// counted.
func (c *Collection) DiskBytes() int64 {
	c.mu.RLock()
	n := int64(c.vecs.nrows)*c.vecs.rowSize + sumsOffset(c.vecs.nrows) + int64(c.pays.size)
	ixFile := filepath.Join(c.indexDir(), ivfpq.FileName)
	c.mu.RUnlock()
	if st, err := c.db.fs.Stat(ixFile); err == nil {
		n += st.Size()
	}
	return n
}

// freesNothingLocked reports whether a compaction would free nothing: no
// dead row that snapshots do not pin, and no byte of the payload file
// that neither a memory nor a pinned memory uses (replaced and deleted
// payloads). It costs a pass over the memories.
// REQUIRES: c.mu held, for reading at least.
func (c *Collection) freesNothingLocked() bool {
	if c.reclaimableRowsLocked() > 0 {
		return false
	}
	var used uint64
	for _, m := range c.mems {
		used += c.pays.recordLen(m.payOff, m.payLen)
	}
	for id, g := range c.snap.ghosts {
		if m, ok := c.mems[id]; ok && m.payOff == g.payOff {
			continue // one record for both
		}
		used += c.pays.recordLen(g.payOff, g.payLen)
	}
	return used >= c.pays.size
}

// runCompact runs the claimed compaction: copy, swap, remove.
func (c *Collection) runCompact() (st CompactStats, err error) {
	db := c.db
	start := time.Now()
	defer db.compacts.Done()
	defer func() {
		c.mu.Lock()
		c.cs.running = false
		if err == nil {
			c.cs.last, c.cs.hasLast = st, true
		}
		c.mu.Unlock()
	}()
	st.BytesBefore = c.DiskBytes()
	c.mu.RLock()
	gen, frozen := c.gen, c.vecs.nrows
	nothing := c.freesNothingLocked()
	c.mu.RUnlock()
	st.RowsBefore = frozen
	if nothing {
		// It would copy every row and payload and free nothing (the
		// dead rows snapshots pin are copied, not freed).
		st.RowsAfter, st.BytesAfter, st.Took = st.RowsBefore, st.BytesBefore, time.Since(start)
		db.opts.Logf("memrl: collection %q: compaction skipped: it would free nothing (%d rows, none reclaimable)", c.name, frozen)
		return st, nil
	}

	ng, err := c.createGen(gen + 1)
	if err != nil {
		return st, err
	}
	swapped := false
	defer func() {
		if !swapped {
			ng.discard()
		}
	}()
	if err := ng.copyFrozen(frozen); err != nil {
		return st, err
	}
	// The bulk of the new files reaches the disk before the swap, so the
	// swap syncs only the tail.
	if err := ng.sync(); err != nil {
		return st, err
	}
	ng.remapIndex()
	old, stall, writeStall, logged, err := ng.swap()
	st.Stall, st.WriteStall = stall, writeStall
	swapped = logged // the marker names the new files: they stay
	if logged {
		// Nothing reads the old files any more (the swap replaced them
		// under the write lock).
		old.vecs.unmap()
	}
	if err != nil {
		// With the marker logged, the old files stay: the disk's
		// checkpoint may still name them. The next open removes them
		// once its own checkpoint names the new generation.
		return st, err
	}
	// The checkpoint naming the new generation is durable: the old files
	// and the new one's row map are no longer needed by any recovery. A
	// failure to remove them is logged; the next open removes the old
	// ones (removeStaleGensLocked).
	if err := c.removeGen(gen); err != nil {
		db.opts.Logf("memrl: collection %q: removing the files compaction replaced: %v", c.name, err)
	}
	if err := c.removeRemapMap(ng.gen); err != nil {
		db.opts.Logf("memrl: collection %q: removing the compaction's row map: %v", c.name, err)
	}
	c.closeRetired()
	c.mu.RLock()
	st.RowsAfter = c.vecs.nrows
	c.mu.RUnlock()
	st.BytesAfter = c.DiskBytes()
	st.Took = time.Since(start)
	db.opts.Logf("memrl: collection %q: compacted %d rows to %d, %d bytes to %d, in %v (reads stalled %v, writes %v)",
		c.name, st.RowsBefore, st.RowsAfter, st.BytesBefore, st.BytesAfter, st.Took.Round(time.Millisecond),
		stall.Round(time.Millisecond), writeStall.Round(time.Millisecond))
	return st, nil
}

// createGen creates the empty files of generation gen, removing any
// leftover of an earlier attempt at it first, and makes their names
// durable.
func (c *Collection) createGen(gen uint64) (*nextGen, error) {
	if err := c.removeGen(gen); err != nil {
		return nil, err
	}
	vecs, err := openVectorStoreGen(c.db.files, c.dir, gen, c.cfg.Dim, 0, true, c.db.opts.MapFiles)
	if err != nil {
		return nil, err
	}
	pays, err := openPayloadStore(c.db.files, filepath.Join(c.dir, genName(payBase, payExt, gen)), 0, 0)
	if err != nil {
		vecs.close()
		return nil, err
	}
	if err := c.db.fs.SyncDir(c.dir); err != nil {
		vecs.close()
		pays.close()
		return nil, fdError(err)
	}
	return &nextGen{c: c, gen: gen, vecs: vecs, pays: pays}, nil
}

// discard closes and removes the files of a generation that was not
// swapped in.
func (ng *nextGen) discard() {
	if ng.ix != nil {
		ng.ix.Close()
	}
	ng.vecs.close()
	ng.pays.close()
	if err := ng.c.removeGen(ng.gen); err != nil {
		ng.c.db.opts.Logf("memrl: collection %q: removing an abandoned compaction's files: %v", ng.c.name, err)
	}
}

// sync makes the new files durable up to what is written.
func (ng *nextGen) sync() error {
	if err := ng.vecs.syncTo(ng.vecs.nrows); err != nil {
		return err
	}
	return ng.pays.syncTo(ng.pays.size)
}

// remapIndex remaps the collection's index to the rows copyFrozen kept,
// before the swap and without the collection's lock (the index's is held
// one list at a time), so that the swap only adds the rows it copies
// itself. A failure is logged; the swap then remaps under the lock.
func (ng *nextGen) remapIndex() {
	c := ng.c
	c.mu.RLock()
	ix, nrows := c.ivf, c.vecs.nrows
	c.mu.RUnlock()
	if ix == nil {
		return
	}
	newOf := make([]uint32, nrows) // every kept row is below nrows
	for i, k := range ng.kept {
		newOf[k.old] = uint32(i) + 1
	}
	out, err := ix.Remap(func(old uint32) (uint32, bool) {
		if old >= uint32(len(newOf)) || newOf[old] == 0 {
			return 0, false
		}
		return newOf[old] - 1, true
	}, uint32(len(ng.kept)))
	if err != nil {
		if !errors.Is(err, ivfpq.ErrClosed) { // a build replaced it meanwhile
			c.db.opts.Logf("memrl: collection %q: compaction: remapping the index: %v", c.name, err)
		}
		return
	}
	ng.ix, ng.ixFrom, ng.ixRows = out, ix, uint32(len(ng.kept))
}

// compactChunk is how many rows copyFrozen reads per hold of the read
// lock; a variable so that tests can make it tiny.
var compactChunk uint32 = 1024

// rowCopy is one row read out of the old files.
type rowCopy struct {
	id  uint64
	m   memory
	old uint32
	vec []float32
	pay []byte
}

// copyFrozen copies the live rows below frozen, and those snapshots pin,
// into the new files, a chunk at a time: each chunk is read (and verified:
// damage is never copied forward, it stops the compaction) under the read
// lock and written after releasing it, paced like a checkpoint's copy.
// Rows deleted after their chunk was copied are settled by the swap, and
// so are pinned rows freed since (kept, dead) or pinned since (copied
// then).
func (ng *nextGen) copyFrozen(frozen uint32) error {
	c := ng.c
	c.mu.RLock()
	pinned := c.pinnedByRowLocked(frozen)
	c.mu.RUnlock()
	pace := newPacer()
	var buf []rowCopy
	for from := uint32(0); from < frozen; {
		pace.step()
		select {
		case <-c.db.stop:
			return ErrClosed // Close is waiting for this compaction
		default:
		}
		to := min(from+compactChunk, frozen)
		c.mu.RLock()
		if c.dropped {
			c.mu.RUnlock()
			return fmt.Errorf("%w: %q", ErrNoCollection, c.name)
		}
		var err error
		buf, err = c.readLiveRowsLocked(buf[:0], from, to, pinned)
		c.mu.RUnlock()
		if err != nil {
			return err
		}
		for _, r := range buf {
			if err := ng.put(r); err != nil {
				return err
			}
		}
		from = to
	}
	return nil
}

// readLiveRowsLocked appends copies of the live rows of [from, to), with
// their payloads, to dst, in row order, and those of the dead rows that
// pinned (pinnedByRowLocked) names and whose memory is still pinned there.
// REQUIRES: c.mu held at least for reading.
func (c *Collection) readLiveRowsLocked(dst []rowCopy, from, to uint32, pinned map[uint32]uint64) ([]rowCopy, error) {
	for r := from; r < to && int(r) < len(c.rowIDs); r++ {
		id := c.rowIDs[r]
		m, ok := c.mems[id]
		if !ok || m.row != r {
			if id, ok = pinned[r]; !ok {
				continue
			}
			if m, ok = c.pinnedLocked(id); !ok || m.row != r {
				continue // freed, or revived elsewhere, since
			}
		}
		rc, err := c.readRowLocked(id, m)
		if err != nil {
			return dst, err
		}
		dst = append(dst, rc)
	}
	return dst, nil
}

// readRowLocked reads and verifies memory id's row and payload.
// REQUIRES: c.mu held at least for reading.
func (c *Collection) readRowLocked(id uint64, m memory) (rowCopy, error) {
	if err := c.vecs.checkRow(m.row); err != nil {
		return rowCopy{}, c.reportLocked(fmt.Errorf("compaction: memory %d: %w", id, err))
	}
	p, err := c.pays.get(id, m.payOff, m.payLen)
	if err != nil {
		return rowCopy{}, c.reportLocked(fmt.Errorf("compaction: %w", err))
	}
	return rowCopy{id: id, m: m, old: m.row, vec: append([]float32(nil), c.vecs.row(m.row)...), pay: p}, nil
}

// compactCopied, when set (by tests only), is called with the id of each
// row put copies, after copying it.
var compactCopied func(id uint64)

// put appends a row and its payload to the new files.
func (ng *nextGen) put(r rowCopy) error {
	row := ng.vecs.nrows
	if err := ng.vecs.put(row, r.vec); err != nil {
		return err
	}
	off, err := ng.putPayload(r.id, r.pay)
	if err != nil {
		return err
	}
	ng.kept = append(ng.kept, keptRow{id: r.id, old: r.old, payLen: uint32(len(r.pay)), oldOff: r.m.payOff, newOff: off})
	if compactCopied != nil {
		compactCopied(r.id)
	}
	return nil
}

// putPayload appends a payload record to the new payload file.
func (ng *nextGen) putPayload(id uint64, p []byte) (uint64, error) {
	off := ng.pays.size
	if err := ng.pays.put(id, off, p); err != nil {
		return 0, err
	}
	if len(p) == 0 {
		// put writes nothing for an empty record without a checksum;
		// every new record has one, so this cannot happen: keep offsets
		// distinct anyway.
		ng.pays.size = max(ng.pays.size, off)
	}
	return off, nil
}

// oldState is what a swap replaces, kept to undo it if the committing
// checkpoint is not committed.
type oldState struct {
	vecs      *vectorStore
	pays      *payloadStore
	rowIDs    []uint64
	dead      *roaring.Bitmap
	ivf       *ivfpq.Index
	index     phase1
	savedRows uint32
	gen       uint64
	mems      map[uint64]memory
	pinned    map[uint64]keptRow
}

// swapTimes are the parts of a swap, for the log.
type swapTimes struct {
	prepare, swap, ckpt time.Duration
}

// swapPlan is what prepareSwapLocked computed for commitSwapLocked: the
// new generation complete on disk, and the changes that put it in use.
type swapPlan struct {
	pinTo map[uint64]pinMove // pinned memory -> its new row and offset
	// mems is the collection's memories at their new rows and offsets: a
	// new map, built with the writers kept out, so that the write lock
	// only swaps it in (moving a million memories in place took a
	// second).
	mems   map[uint64]memory
	rowIDs []uint64        // the new row -> id map
	dead   *roaring.Bitmap // the new dead rows
	newIx  *ivfpq.Index    // the remapped index, or nil
	ixFrom *ivfpq.Index    // the index newIx was made from
}

// pinMove is a pinned memory's new row and payload offset.
type pinMove struct {
	row uint32
	off uint64
}

// swap finishes the new generation and puts it in use. It holds the
// database's checkpoint lock and the transaction groups' lock throughout
// (no transaction is open at the marker, whose members replay would apply
// after it; no other checkpoint runs until the one naming the new
// generation), and the collection's writeGate until the marker is logged.
// Under the collection's read lock (readers go on) it completes the new
// generation (prepareSwapLocked) and writes its row map; under the write
// lock, it swaps in the memories at their new rows, the row map, the index
// and the attribute index (commitSwapLocked), and logs the remap marker
// (remap.go): records logged after it refer to the new rows. Then the
// writers go on, and it writes the full checkpoint that records the new
// generation. It returns the replaced state, how long the write lock was
// held, how long writers waited (writeGate was held), and whether the
// marker was logged: if so the new generation is in use (and its files
// must stay) even when the checkpoint failed, and the old generation's
// files must stay unless the checkpoint was committed (err == nil): a
// recovery from the old checkpoint replays the marker over them.
func (ng *nextGen) swap() (_ oldState, stall, writeStall time.Duration, logged bool, _ error) {
	c, db := ng.c, ng.c.db
	db.groups.excl.Lock() // no group open at the marker, nor during the checkpoint (group.go)
	defer db.groups.excl.Unlock()
	db.ckptMu.Lock()
	defer db.ckptMu.Unlock()
	c.writeGate.Lock()
	gated := true
	defer func() {
		if gated {
			c.writeGate.Unlock()
		}
	}()
	// Once c's read lock is held, no writer of c holds its lock or can
	// take it (they wait at writeGate) until the marker is logged, so the
	// state prepareSwapLocked reads is the state at the marker: the one a
	// recovery replays up to it. Rewards, which log their results by id
	// under the read lock, may run; they replay alike on either side of
	// the marker.
	var tm swapTimes
	start := time.Now()
	c.mu.RLock()
	plan, err := ng.prepareSwapLocked()
	var mapSum uint64
	if err == nil {
		// The row map must be durable before the marker is (as the
		// files are: prepareSwapLocked synced them).
		mapSum, err = ng.writeRemapMap(plan.pinTo)
		if err != nil && plan.newIx != nil {
			plan.newIx.Close()
		}
	}
	c.mu.RUnlock()
	tm.prepare = time.Since(start)
	if err != nil {
		return oldState{}, 0, time.Since(start), false, err
	}

	c.mu.Lock()
	locked := time.Now()
	old, err := ng.commitSwapLocked(plan)
	if err == nil {
		// Logged in the same hold as the swap: every record of c logged
		// before it was applied to the old rows, every one after it to
		// the new. Not waited for: every later record's ticket waits for
		// it (the log is written in order).
		_, err = db.log.Enqueue(encodeRemap(remapRec{uid: c.uid, gen: ng.gen, nrows: ng.vecs.nrows, paySize: ng.pays.size, mapSum: mapSum}))
		if err != nil {
			// Nothing of the swap was logged: put everything back.
			c.restoreLocked(old, plan.newIx)
			err = fmt.Errorf("engine: compaction's remap marker: %w", err)
		}
	}
	stall = time.Since(locked)
	tm.swap = stall
	c.mu.Unlock()
	c.writeGate.Unlock()
	gated = false
	writeStall = time.Since(start)
	if err != nil {
		return oldState{}, stall, writeStall, false, err
	}

	// The checkpoint naming the new generation, taken like any full one
	// (fuzzy: writers go on; its position follows the marker). Should it
	// fail, the next one must be full too: a delta over the old chain's
	// base would name the old generation (ckptMu is held).
	db.chain.id = 0
	ckptStart := time.Now()
	if compactCheckpointing != nil {
		compactCheckpointing(0)
	}
	err = db.checkpointLocked(true)
	tm.ckpt = time.Since(ckptStart)

	c.mu.Lock()
	if old.ivf != nil {
		c.retired = append(c.retired, old.ivf)
	}
	c.saveIndexAsyncLocked()
	c.maybeBuildLocked()
	c.mu.Unlock()
	if err != nil {
		return old, stall, writeStall, true, fmt.Errorf("engine: compaction's checkpoint (the new generation is in use; the old one's files stay until a restart): %w", err)
	}
	db.opts.Logf("memrl: collection %q: compaction held the write lock %v; the tail copy took %v under the read lock (writers waited %v); the checkpoint after it %v (writers went on)",
		c.name, stall.Round(time.Millisecond), tm.prepare.Round(time.Millisecond), writeStall.Round(time.Millisecond), tm.ckpt.Round(time.Millisecond))
	return old, stall, writeStall, true, nil
}

// prepareSwapLocked completes the new generation, with the collection's
// writers kept out: it copies the rows added since copyFrozen's
// snapshot, the payloads replaced since their row was copied, and the
// rows pinned since; syncs; remaps the index; and builds the memory map,
// row map and dead rows of the new generation. Rows
// copyFrozen copied whose memory was deleted (or unpinned) since are kept
// but dead (the next compaction drops them). Nothing of the collection is
// changed.
// REQUIRES: c.mu held for reading; c.writeGate and db.ckptMu held.
func (ng *nextGen) prepareSwapLocked() (swapPlan, error) {
	c, db := ng.c, ng.c.db
	if c.dropped {
		return swapPlan{}, fmt.Errorf("%w: %q", ErrNoCollection, c.name)
	}
	if db.ckptErr != nil {
		return swapPlan{}, db.ckptErr
	}
	frozen := uint32(0)
	if n := len(ng.kept); n > 0 {
		frozen = ng.kept[n-1].old + 1
	}
	// Payloads replaced since their row was copied: copy the current one.
	for i := range ng.kept {
		k := &ng.kept[i]
		if m, ok := c.mems[k.id]; ok && m.row == k.old && m.payOff != k.oldOff {
			p, err := c.pays.get(k.id, m.payOff, m.payLen)
			if err != nil {
				return swapPlan{}, c.reportLocked(fmt.Errorf("compaction: %w", err))
			}
			off, err := ng.putPayload(k.id, p)
			if err != nil {
				return swapPlan{}, err
			}
			k.oldOff, k.newOff, k.payLen = m.payOff, off, m.payLen
		}
	}
	// The rows added since (copyFrozen stopped at its snapshot's end; the
	// rows past the last one it kept are all looked at again).
	tail, err := c.readLiveRowsLocked(nil, frozen, c.vecs.nrows, nil)
	if err != nil {
		return swapPlan{}, err
	}
	for _, r := range tail {
		if err := ng.put(r); err != nil {
			return swapPlan{}, err
		}
	}
	// Rows snapshots pin: moved with the live ones (copyFrozen copied
	// them), or copied now (pinned since).
	newOf := make([]uint32, c.vecs.nrows) // old row -> new row + 1; 0: not kept
	for i, k := range ng.kept {
		newOf[k.old] = uint32(i) + 1
	}
	plan := swapPlan{pinTo: map[uint64]pinMove{}}
	for id, m := range c.snap.ghosts {
		if m.row >= uint32(len(newOf)) {
			return swapPlan{}, fmt.Errorf("engine: collection %q: pinned memory %d at row %d, past the %d rows", c.name, id, m.row, len(newOf))
		}
		if nr := newOf[m.row]; nr != 0 && ng.kept[nr-1].id == id && ng.kept[nr-1].oldOff == m.payOff {
			plan.pinTo[id] = pinMove{nr - 1, ng.kept[nr-1].newOff}
			continue
		}
		rc, err := c.readRowLocked(id, m)
		if err != nil {
			return swapPlan{}, err
		}
		if nr := newOf[m.row]; nr != 0 {
			// The row is kept (for a live memory of the same id's
			// vector); only this payload is copied.
			off, err := ng.putPayload(id, rc.pay)
			if err != nil {
				return swapPlan{}, err
			}
			plan.pinTo[id] = pinMove{nr - 1, off}
			continue
		}
		if err := ng.put(rc); err != nil {
			return swapPlan{}, err
		}
		n := uint32(len(ng.kept))
		newOf[m.row] = n
		plan.pinTo[id] = pinMove{n - 1, ng.kept[n-1].newOff}
	}
	if err := ng.sync(); err != nil {
		return swapPlan{}, err
	}
	// The memories at their new places, the row map and the dead rows of
	// the new generation.
	plan.rowIDs = make([]uint64, len(ng.kept))
	plan.dead = roaring.New()
	plan.mems = make(map[uint64]memory, len(c.mems))
	for i, k := range ng.kept {
		plan.rowIDs[i] = k.id
		if m, ok := c.mems[k.id]; ok && m.row == k.old {
			m.row, m.payOff = uint32(i), k.newOff
			plan.mems[k.id] = m
		} else {
			plan.dead.Add(uint32(i))
		}
	}
	if len(plan.mems) != len(c.mems) {
		// INVARIANT: every live memory's row was copied (copyFrozen, the
		// tail above). Never swap in files that lack one.
		return swapPlan{}, fmt.Errorf("engine: collection %q: compaction copied %d of the %d live memories", c.name, len(plan.mems), len(c.mems))
	}
	plan.newIx, plan.ixFrom = ng.remapForSwapLocked(newOf), c.ivf
	return plan, nil
}

// remapForSwapLocked returns the collection's index remapped to the new
// rows (codes copied, not re-encoded), or nil (searching exactly until it
// is rebuilt).
// REQUIRES: c.mu held for reading; c.writeGate held.
func (ng *nextGen) remapForSwapLocked(newOf []uint32) *ivfpq.Index {
	c, db := ng.c, ng.c.db
	var newIx *ivfpq.Index
	var err error
	if c.ivf != nil && ng.ix != nil && c.ivf == ng.ixFrom {
		// Remapped before the swap: append the rows copied since, their
		// codes copied from the index too (every old row is in it).
		newIx, ng.ix = ng.ix, nil
		err = c.ivf.RemapAppend(newIx, func(old uint32) (uint32, bool) {
			if int(old) < len(newOf) && newOf[old] > ng.ixRows {
				return newOf[old] - 1, true
			}
			return 0, false
		}, uint32(len(ng.kept)))
		if err != nil {
			db.opts.Logf("memrl: collection %q: compaction could not complete the remapped index, searching exactly until it is rebuilt: %v", c.name, err)
			newIx.Close()
			newIx = nil
		}
	} else if c.ivf != nil {
		if c.ivf.Rows() == c.vecs.nrows {
			newIx, err = c.ivf.Remap(func(old uint32) (uint32, bool) {
				if int(old) >= len(newOf) || newOf[old] == 0 {
					return 0, false
				}
				return newOf[old] - 1, true
			}, uint32(len(ng.kept)))
		} else {
			err = fmt.Errorf("index holds %d rows, the collection %d", c.ivf.Rows(), c.vecs.nrows)
		}
		if err != nil {
			db.opts.Logf("memrl: collection %q: compaction could not remap the index, searching exactly until it is rebuilt: %v", c.name, err)
			newIx = nil
		}
	}
	if ng.ix != nil { // made from an index a build has replaced since
		ng.ix.Close()
		ng.ix = nil
	}
	return newIx
}

// commitSwapLocked puts the generation prepareSwapLocked completed in use:
// it swaps in the memories at their new rows and payload offsets (a map
// the plan holds), moves the pinned ghosts, and swaps in the new files,
// row map, dead rows, attribute index and index. It returns what it replaced, for restoreLocked. On error
// nothing is changed (and plan.newIx is closed).
// REQUIRES: c.mu held for writing; c.writeGate held since plan was made.
func (ng *nextGen) commitSwapLocked(plan swapPlan) (oldState, error) {
	c := ng.c
	if c.dropped {
		if plan.newIx != nil {
			plan.newIx.Close()
		}
		return oldState{}, fmt.Errorf("%w: %q", ErrNoCollection, c.name)
	}
	newIx := plan.newIx
	if c.ivf != plan.ixFrom {
		// An index build (which does not wait at writeGate) installed
		// its index since: it indexed the old rows.
		c.db.opts.Logf("memrl: collection %q: an index build ended during the compaction's swap, searching exactly until it is rebuilt", c.name)
		if newIx != nil {
			newIx.Close()
			newIx = nil
		}
	}
	old := oldState{vecs: c.vecs, pays: c.pays, rowIDs: c.rowIDs, dead: c.dead, ivf: c.ivf, index: c.index,
		savedRows: c.savedRows, gen: c.gen, mems: c.mems, pinned: map[uint64]keptRow{}}
	c.mems = plan.mems
	c.forEachPinnedLocked(func(id uint64, m *memory) {
		if to, ok := plan.pinTo[id]; ok {
			old.pinned[id] = keptRow{old: m.row, oldOff: m.payOff}
			m.row, m.payOff = to.row, to.off
		}
	})
	c.vecs, c.pays, c.rowIDs, c.gen, c.dead = ng.vecs, ng.pays, plan.rowIDs, ng.gen, plan.dead
	c.rebuildFilterIndexLocked()
	c.ivf, c.index, c.savedRows = nil, exactScan{c}, 0
	if newIx != nil {
		c.ivf, c.index = newIx, ivfPhase1{c, newIx}
	}
	return old, nil
}

// restoreLocked puts back the generation a swap replaced (old), whose
// committing checkpoint was not committed, and closes the remapped index
// newIx (if not nil).
// REQUIRES: c.mu held for writing; nothing that depends on rows logged
// for c since the swap.
func (c *Collection) restoreLocked(old oldState, newIx *ivfpq.Index) {
	c.mems = old.mems
	c.forEachPinnedLocked(func(id uint64, m *memory) {
		if k, ok := old.pinned[id]; ok {
			m.row, m.payOff = k.old, k.oldOff
		}
	})
	c.vecs, c.pays, c.rowIDs, c.dead, c.gen = old.vecs, old.pays, old.rowIDs, old.dead, old.gen
	c.ivf, c.index, c.savedRows = old.ivf, old.index, old.savedRows
	c.rebuildFilterIndexLocked()
	if newIx != nil {
		newIx.Close()
	}
}

// compactCheckpointing, when set (by tests only), is called as the
// checkpoint committing a compaction starts to copy the collection.
var compactCheckpointing func(uint64)

// snapshotHeldTo is snapshotTo for a collection whose lock the caller
// holds, for reading, with its writers kept out (compaction's swap): the
// whole collection is copied under that one hold, in chunks only to bound
// the memory used. Only rewards run meanwhile; they take their dirty
// marks again and log their results, replayed over this copy. It clears
// c.deleted, which only writers and checkpoints touch.
// REQUIRES: c.mu held; c.writeGate held for writing; db.ckptMu held.
func (c *Collection) snapshotHeldTo(cw *ckptWriter) (ckptSizes, int) {
	c.deleted = make(map[uint64]struct{})
	var discard []qtable.IDEntry
	for i := 0; i < qtable.NumStripes; i++ {
		discard = c.q.TakeDirty(i, discard[:0])
	}
	cw.tombstones(nil)
	chunk := make([]ckptMemory, 0, snapshotChunk)
	n := 0
	for row := uint32(0); row < c.vecs.nrows; {
		end := min(row+snapshotChunk, c.vecs.nrows)
		chunk = c.snapshotRowsLocked(chunk[:0], row, end)
		cw.memories(chunk)
		n += len(chunk)
		row = end
	}
	return ckptSizes{nrows: c.vecs.nrows, paySize: c.pays.size, nextID: c.nextID, sections: c.ckptSectionsLocked()}, n
}
