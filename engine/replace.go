package engine

import (
	"bytes"
	"errors"
	"fmt"
	"math"

	"github.com/memrl/memrl/engine/record"
)

// Replacing a memory's vector in place (MEM.SETVECTOR, and MEM.ADD …
// REPLACE, an upsert by key): the memory keeps its id, key, creation
// time, expiry, Q, visits, rewards and history; what changes is its
// vector, and optionally its attributes and its payload, all in one
// logged record (recReplace), so a crash keeps the old state or the new
// one, never half of each.
//
// The new vector is appended as a new row of the vector file, as an add's
// is, and the old row becomes dead: rows are never written twice outside a
// compaction (their checksums, the checkpoints' bounds checks and the IVF
// index all rely on that). To everything that works by rows (the IVF
// index, the attribute bitmaps, compaction, the dead-row count that
// triggers it) a replace looks like a delete of the old row and an add of
// the new one with the same id.
//
// Like every record it logs results (the row and payload offset chosen),
// so replaying it twice changes nothing. The record's body and codec are
// package record's (record.Replace, engine/record/doc.go has its layout).
const recReplace = record.TypeReplace

// The flags of a recReplace record; any other bit is a malformed record.
const (
	replaceAttrs   = record.ReplaceAttrs   // the record carries new attributes (empty: none)
	replacePayload = record.ReplacePayload // the record carries a new payload
)

// ErrReplaceHeld: a memory that a snapshot holds cannot have its vector
// replaced, since a rollback must find the vector the snapshot saw and
// a snapshot pins only deleted memories' rows. Delete the snapshots that
// hold it (MEM.DELSNAPSHOT) first.
var ErrReplaceHeld = errors.New("memory is held by a snapshot: its vector cannot be replaced until the snapshots holding it are deleted")

// ReplaceRequest is the new state of a memory given to Replace.
type ReplaceRequest struct {
	Vector []float32 // the new vector (required)
	// Attrs replaces the attributes when SetAttrs (empty: none);
	// otherwise they are kept.
	Attrs    []byte
	SetAttrs bool
	// Payload replaces the payload when SetPayload; otherwise it is kept.
	Payload    []byte
	SetPayload bool
}

type replaceRec struct {
	uid, id uint64
	row     uint32
	flags   byte
	attrs   []byte // compact JSON, or nil (flags&replaceAttrs)
	payOff  uint64 // flags&replacePayload
	payload []byte
	vec     []float32
}

func encodeReplace(r replaceRec) []byte {
	return record.EncodeReplace(record.Replace{UID: r.uid, ID: r.id, Row: r.row, Flags: r.flags,
		Attrs: r.attrs, PayOff: r.payOff, Payload: r.payload, Vec: r.vec})
}

// decodeReplace decodes a recReplace body whose vector has dim components
// (dim < 0: whatever the body holds, for inspection). The attributes and
// payload alias b.
func decodeReplace(b []byte, dim int) (replaceRec, error) {
	r, err := record.DecodeReplace(b, dim)
	return replaceRec{uid: r.UID, id: r.ID, row: r.Row, flags: r.Flags,
		attrs: r.Attrs, payOff: r.PayOff, payload: r.Payload, vec: r.Vec}, err
}

// Replace gives memory r a new vector (and, as req says, new attributes
// and payload), keeping its id, key, expiry, Q, visits and history; it
// returns the id once the change is durable.
func (c *Collection) Replace(r Ref, req ReplaceRequest) (uint64, error) {
	id, t, err := c.ReplaceDeferred(r, req)
	if err != nil {
		return 0, err
	}
	return id, c.db.WaitDurable(t)
}

// ReplaceDeferred is Replace without the wait: the caller passes the
// ticket to DB.WaitDurable before acknowledging the change. Errors:
// ErrNoMemory (no live memory r), ErrReplaceHeld, and the add's errors for
// a bad vector, attributes or payload (then nothing changed).
func (c *Collection) ReplaceDeferred(r Ref, req ReplaceRequest) (uint64, Ticket, error) {
	rec, err := c.checkReplace(req)
	if err != nil {
		return 0, 0, err
	}
	if err := c.lockLive(); err != nil {
		return 0, 0, err
	}
	defer c.mu.Unlock()
	id, _, err := c.resolveLocked(r, c.db.nowNanos())
	if err != nil {
		return 0, 0, err
	}
	rec.id = id
	t, err := c.replaceLocked(rec)
	if err != nil {
		return 0, 0, err
	}
	return id, t, nil
}

// checkReplace validates req and returns its record, without id, row or
// payload offset.
func (c *Collection) checkReplace(req ReplaceRequest) (replaceRec, error) {
	vec, err := c.checkVector(req.Vector)
	if err != nil {
		return replaceRec{}, err
	}
	rec := replaceRec{uid: c.uid, vec: vec}
	if req.SetAttrs {
		a, err := validateAttrs(req.Attrs)
		if err != nil {
			return replaceRec{}, err
		}
		rec.flags |= replaceAttrs
		rec.attrs = a
	}
	if req.SetPayload {
		if len(req.Payload) > MaxPayload {
			return replaceRec{}, fmt.Errorf("%w: %d bytes, the limit is %d", ErrPayloadTooLarge, len(req.Payload), MaxPayload)
		}
		rec.flags |= replacePayload
		rec.payload = req.Payload
	}
	return rec, nil
}

// replaceLocked places, writes, logs and applies rec, whose id names a
// live memory, and returns the ticket to wait for.
// REQUIRES: c.mu held for writing; rec validated by checkReplace.
func (c *Collection) replaceLocked(rec replaceRec) (Ticket, error) {
	if c.heldLocked(rec.id) { // snapshot_ghosts.go
		return 0, fmt.Errorf("%w (memory %d)", ErrReplaceHeld, rec.id)
	}
	if uint64(c.vecs.nrows)+1 > math.MaxUint32 {
		return 0, fmt.Errorf("%w: collection is full", ErrBadParam)
	}
	rec.row = c.vecs.nrows
	rec.payOff = c.pays.size
	// Written before they are logged, as an add's files are, so that a
	// full disk fails the command cleanly; nothing refers to them until
	// the record is applied.
	if err := c.writeReplaceFilesLocked(rec); err != nil {
		c.unwriteReplaceFilesLocked(rec)
		return 0, err
	}
	lsn, err := c.db.logFor(c.name, encodeReplace(rec))
	if err != nil {
		c.unwriteReplaceFilesLocked(rec)
		return 0, err
	}
	c.applyReplaceLocked(rec)
	c.indexAddLocked(rec.row, rec.vec) // index.go
	return Ticket(lsn), nil
}

// writeReplaceFilesLocked writes rec's vector row and, if it has one, its
// payload. Replay calls it for every record, the memory deleted since or
// not: the files then hold every byte the log placed.
// REQUIRES: c.mu held for writing (or replay).
func (c *Collection) writeReplaceFilesLocked(rec replaceRec) error {
	if err := c.vecs.put(rec.row, rec.vec); err != nil {
		return err
	}
	if rec.flags&replacePayload != 0 {
		return c.pays.put(rec.id, rec.payOff, rec.payload)
	}
	return nil
}

// unwriteReplaceFilesLocked forgets what writeReplaceFilesLocked wrote for
// a record that was not logged (see unwriteFilesLocked).
// REQUIRES: c.mu held for writing since writeReplaceFilesLocked(rec).
func (c *Collection) unwriteReplaceFilesLocked(rec replaceRec) {
	c.vecs.nrows = min(c.vecs.nrows, rec.row)
	if rec.flags&replacePayload != 0 {
		c.pays.size = min(c.pays.size, rec.payOff)
	}
}

// applyReplaceLocked moves memory rec.id to its new row (its old row
// becomes dead) with the attributes and payload rec gives. Replay calls it
// for memories deleted since (then the new row is dead) and over a fuzzy
// checkpoint that already holds the memory at rec.row (then only the
// attributes and payload are set again).
// REQUIRES: c.mu held for writing; the files hold rec's row.
func (c *Collection) applyReplaceLocked(rec replaceRec) {
	for uint32(len(c.rowIDs)) <= rec.row {
		c.rowIDs = append(c.rowIDs, 0)
	}
	m, ok := c.mems[rec.id]
	if !ok {
		c.dead.Add(rec.row)
		return
	}
	defer c.accountLocked() // datamem.go
	c.filterIndexRemoveLocked(m.row, m.attrs())
	if m.row != rec.row {
		c.dead.Add(m.row)
	}
	attrs := m.attrs()
	if rec.flags&replaceAttrs != 0 {
		// Replay's attributes alias the log's buffer: keep a copy.
		attrs = bytes.Clone(rec.attrs)
	}
	m.ext = makeExt(attrs, m.key(), m.expires())
	if rec.flags&replacePayload != 0 {
		m.payOff, m.payLen = rec.payOff, uint32(len(rec.payload))
	}
	m.row = rec.row
	c.mems[rec.id] = m
	c.rowIDs[rec.row] = rec.id
	c.dead.Remove(rec.row)
	c.filterIndexAddLocked(rec.row, m.attrs())
	c.markDirtyLocked(rec.id) // memory_update.go
}

// replayReplace applies a logged recReplace.
// REQUIRES: no concurrent use of db (Open has not returned yet).
func (db *DB) replayReplace(rec []byte) error {
	uid, err := addRecUID(rec) // uid is the first field, as in an add
	if err != nil {
		return err
	}
	c, ok := db.byUID[uid]
	if !ok {
		return fmt.Errorf("replace in unknown collection %d", uid)
	}
	r, err := decodeReplace(rec, c.cfg.Dim)
	if err != nil {
		return err
	}
	if err := c.writeReplaceFilesLocked(r); err != nil {
		return err
	}
	c.applyReplaceLocked(r)
	return nil
}

// checkUpsert enforces AddRequest.Replace's rules.
func checkUpsert(req *AddRequest) error {
	switch {
	case req.Key == "":
		return fmt.Errorf("%w: REPLACE needs a KEY (it replaces the memory holding that key)", ErrBadParam)
	case req.HasID:
		return fmt.Errorf("%w: REPLACE takes no ID (the memory replaced keeps its own)", ErrBadParam)
	case req.HasDedup:
		return fmt.Errorf("%w: REPLACE and DEDUP cannot be combined", ErrBadParam)
	case req.TTL != 0:
		return fmt.Errorf("%w: REPLACE takes no TTL (set an expiry with MEM.EXPIRE)", ErrBadParam)
	}
	return nil
}

// upsertLocked replaces the live memory holding key with r's vector,
// attributes and payload (an add with Replace), and reports found; when
// no live memory holds key it does nothing and reports !found, and the
// caller adds r.
// REQUIRES: c.mu held for writing; r checked by checkAdd.
func (c *Collection) upsertLocked(r addRec, key string, now int64) (id uint64, t Ticket, found bool, err error) {
	id, ok := c.keyIDLocked(key)
	if !ok {
		return 0, 0, false, nil
	}
	if m, ok := c.mems[id]; !ok || m.expiredAt(now) {
		return 0, 0, false, nil // the add purges the expired holder
	}
	rec := replaceRec{uid: c.uid, id: id, flags: replaceAttrs | replacePayload,
		attrs: r.Attrs, payload: r.Payload, vec: r.Vec}
	t, err = c.replaceLocked(rec)
	if err != nil {
		return 0, 0, false, err
	}
	return id, t, true, nil
}
