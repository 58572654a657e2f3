package engine

import (
	"fmt"
	"math"
)

// Batch adds.
//
// AddBatch (MEM.MADD) stores many memories with one lock hold, one log
// append and one durability wait. It is all-or-nothing: every memory is
// validated, given its id and written to the files before any record is
// logged, and the records are logged with one wal.EnqueueBatch, which
// appends all or none. Add is a batch of one, so a single add and a batch
// share every rule.
//
// Ids are given as a sequence of single adds in the batch's order would
// give them (assignIDsLocked): an explicit ID is refused if it is live or
// named earlier in the batch, and an add without ID gets one above every
// id used so far, the batch's included.

// BatchError is the error of a batch refused because of one of its
// memories. Nothing of the batch was added. It wraps the memory's error,
// so errors.Is matches the sentinel (ErrDimension, ErrIDExists, ...).
type BatchError struct {
	Index int // 0-based position of the memory in the batch
	Count int // memories in the batch
	Err   error
}

// Error names the memory 1-based, as "memory 3: ..." (the server's
// parsing errors of MEM.MADD name memories the same way).
func (e *BatchError) Error() string {
	return fmt.Sprintf("memory %d: %v", e.Index+1, e.Err)
}

func (e *BatchError) Unwrap() error { return e.Err }

// AddBatch stores the memories of reqs, all or none, and returns their ids
// in the order given once the change is durable (as the database's sync
// policy defines durable). A memory that fails validation fails the whole
// batch with a *BatchError naming it, and nothing is added. A memory
// with HasDedup or Replace is refused (ErrBadParam), whatever the batch's
// size: deduplication and replacement are for Collection.Add only.
//
// The caller may reuse reqs' slices once AddBatch returns: nothing of them
// is kept (vectors are copied, payloads written to the file and the log).
func (c *Collection) AddBatch(reqs []AddRequest) ([]uint64, error) {
	ids, t, err := c.AddBatchDeferred(reqs)
	if err != nil {
		return nil, err
	}
	return ids, c.db.WaitDurable(t)
}

// AddBatchDeferred is AddBatch without the wait: it stores and logs the
// memories and returns their ids and the one ticket to pass to
// DB.WaitDurable before acknowledging any of them (see durable.go).
func (c *Collection) AddBatchDeferred(reqs []AddRequest) ([]uint64, Ticket, error) {
	if len(reqs) == 0 {
		return nil, 0, fmt.Errorf("%w: a batch holds at least one memory", ErrBadParam)
	}
	// DEDUP and REPLACE are refused in every batch, one memory included,
	// so that MEM.MADD behaves the same whatever its size: a batch of one
	// that deduplicated or replaced would answer differently from the
	// same memory in a batch of two.
	for i := range reqs {
		if reqs[i].Replace {
			return nil, 0, &BatchError{Index: i, Count: len(reqs),
				Err: fmt.Errorf("%w: REPLACE is for single adds (MEM.ADD), not batches", ErrBadParam)}
		}
		if reqs[i].HasDedup {
			return nil, 0, &BatchError{Index: i, Count: len(reqs),
				Err: fmt.Errorf("%w: DEDUP is for single adds (MEM.ADD), not batches", ErrBadParam)}
		}
	}
	ids, t, bad, err := c.addDeferred(reqs)
	if err != nil && bad >= 0 {
		err = &BatchError{Index: bad, Count: len(reqs), Err: err}
	}
	return ids, t, err
}

// addDeferred adds reqs, all or none. On failure it returns the index of
// the memory at fault, or -1 when the failure is not one memory's (the
// collection was dropped, a file write or the log failed).
func (c *Collection) addDeferred(reqs []AddRequest) (ids []uint64, t Ticket, bad int, err error) {
	recs := make([]addRec, len(reqs))
	for i := range reqs {
		if recs[i], err = c.checkAdd(&reqs[i]); err != nil {
			return nil, 0, i, err
		}
	}
	if err := c.lockLive(); err != nil {
		return nil, 0, -1, err
	}
	defer c.mu.Unlock()
	now := c.db.nowNanos()
	if len(reqs) == 1 && reqs[0].HasDedup {
		if id, t, found, err := c.dedupLocked(&reqs[0], recs[0], now); err != nil || found {
			if err != nil {
				return nil, 0, -1, err
			}
			return []uint64{id}, t, -1, nil
		}
	}
	if len(reqs) == 1 && reqs[0].Replace {
		if id, t, found, err := c.upsertLocked(recs[0], reqs[0].Key, now); err != nil || found {
			if err != nil {
				return nil, 0, -1, err
			}
			return []uint64{id}, t, -1, nil
		}
	}
	if bad, err := c.assignIDsLocked(reqs, recs, now); err != nil {
		return nil, 0, bad, err
	}
	if uint64(c.vecs.nrows)+uint64(len(recs)) > math.MaxUint32 {
		return nil, 0, -1, fmt.Errorf("%w: collection is full", ErrBadParam)
	}
	ids = make([]uint64, len(recs))
	for i := range recs {
		ids[i] = recs[i].ID
	}
	// Keys (and ids) still held by expired memories: those memories are
	// deleted first, as their sweep would (expiry.go): to a client they are
	// gone already. The delete is logged before the adds, in the same
	// critical section, so replay deletes them and then adds the new ones;
	// if the batch then fails, only memories no client could see are gone.
	purge, bad, err := c.claimLocked(reqs, ids, now) // keys.go
	if err != nil {
		return nil, 0, bad, err
	}
	if len(purge) > 0 {
		if _, err := c.deleteIDsLocked(purge); err != nil {
			return nil, 0, -1, err
		}
	}
	for i := range recs {
		if reqs[i].TTL > 0 {
			recs[i].Expires = now + int64(reqs[i].TTL)
		}
	}
	// The files are written before the records are logged so that a full
	// disk fails the batch cleanly; they are derived data, and bytes past
	// the checkpointed sizes are rewritten by replay.
	created := now
	c.placeLocked(recs)
	if err := c.writeBatchFilesLocked(recs); err != nil { // batch_files.go
		c.unwriteFilesLocked(recs[0])
		return nil, 0, -1, err
	}
	bufs := make([][]byte, len(recs))
	for i := range recs {
		recs[i].Created = created
		bufs[i] = encodeAdd(recs[i])
	}
	lsn, err := c.db.logBatchFor(c.name, bufs)
	if err != nil {
		c.unwriteFilesLocked(recs[0])
		return nil, 0, -1, err
	}
	for _, r := range recs {
		c.applyAddLocked(r)
		c.indexAddLocked(r.Row, r.Vec)
	}
	return ids, Ticket(lsn), -1, nil
}

// checkAdd validates one memory of an add and returns its record, lacking
// the id, row, payload offset and time that the locked part gives it. It
// takes no lock.
func (c *Collection) checkAdd(req *AddRequest) (addRec, error) {
	vec, err := c.checkVector(req.Vector)
	if err != nil {
		return addRec{}, err
	}
	if len(req.Payload) > MaxPayload {
		return addRec{}, fmt.Errorf("%w: %d bytes, the limit is %d", ErrPayloadTooLarge, len(req.Payload), MaxPayload)
	}
	if req.HasID && req.ID > MaxID {
		return addRec{}, fmt.Errorf("%w: ID must be at most %d", ErrBadParam, uint64(MaxID))
	}
	if req.HasDedup && !finite(req.Dedup) {
		return addRec{}, fmt.Errorf("%w: DEDUP", ErrBadNumber)
	}
	if req.Replace {
		if err := checkUpsert(req); err != nil {
			return addRec{}, err
		}
	}
	attrs, err := checkAddExt(req) // keys.go
	if err != nil {
		return addRec{}, err
	}
	q := c.cfg.QInit
	if req.HasQ {
		if err := boundedValue(req.Q, "Q"); err != nil {
			return addRec{}, err
		}
		q = req.Q
	}
	return addRec{UID: c.uid, Q: q, Payload: req.Payload, Vec: vec, Attrs: attrs, Key: req.Key}, nil
}

// assignIDsLocked sets recs[i].id for each request, as that many single
// adds in order would, without changing the collection (but for the
// aboveLive cache). An add without ID gets nextID (one above every id ever
// used) while it is at most MaxID, then one above the highest live id, so
// that deleting the memories at the top of the id space frees their ids
// again; an explicit ID must not be live (an expired memory's id may be
// named: claimLocked has it deleted first). On failure it returns the
// index of the memory at fault.
// REQUIRES: c.mu held for writing.
func (c *Collection) assignIDsLocked(reqs []AddRequest, recs []addRec, now int64) (int, error) {
	next := c.nextID // one above every id used, the batch's included
	var above uint64 // 1 + the highest live id, the batch's included; 0 until needed
	var inBatch map[uint64]struct{}
	if len(reqs) > 1 {
		inBatch = make(map[uint64]struct{}, len(reqs))
	}
	for i := range reqs {
		var id uint64
		switch {
		case reqs[i].HasID:
			id = reqs[i].ID
			if m, ok := c.mems[id]; ok && !m.expiredAt(now) {
				return i, fmt.Errorf("%w: %d", ErrIDExists, id)
			}
			if _, ok := inBatch[id]; ok {
				return i, fmt.Errorf("%w: %d (named earlier in the batch)", ErrIDExists, id)
			}
			if err := c.checkNotPinnedLocked(id); err != nil { // snapshot.go
				return i, err
			}
		case next <= MaxID:
			id = next
		default:
			if above == 0 {
				if c.aboveLive == 0 {
					c.aboveLive = c.scanAboveLiveLocked() // a cache: valid for the live set now
				}
				above = c.aboveLive
				for b := range inBatch {
					above = max(above, b+1)
				}
			}
			if above > MaxID {
				return i, fmt.Errorf("%w: no memory ids left above the highest id %d; give an explicit ID", ErrBadParam, uint64(MaxID))
			}
			id = above
		}
		if inBatch != nil {
			inBatch[id] = struct{}{}
		}
		if id >= next {
			next = id + 1 // id <= MaxID: no wrap
		}
		if above != 0 && id >= above {
			above = id + 1
		}
		recs[i].ID = id
	}
	return -1, nil
}
