package engine

import (
	"fmt"

	farm "github.com/dgryski/go-farm"
)

// String keys: a memory may carry an external key (a UUID, a task id)
// given when it is added, by which every command can name it instead of
// its id. The collection indexes keys by a 64-bit fingerprint (farmhash
// Fingerprint64, stable across versions and platforms) mapped to the id,
// so the index costs 16 bytes a key whatever the keys' lengths; the key
// itself is kept with its memory (memExt) and compared on every lookup,
// so two different keys with one fingerprint are never taken for each
// other: the second is refused with ErrKeyCollision.
//
// Keys are unique: an add with a key a live memory holds fails with
// ErrKeyExists (as an explicit ID in use does), so a retried add is never
// stored twice; to replace a memory, delete it first (MULTI/EXEC makes
// both one step). A delete frees the key, and so does expiry.

// MaxKeyLen is the longest key, in bytes.
const MaxKeyLen = 512

// keyFingerprint is the key index's hash; tests replace it to force
// collisions.
var keyFingerprint = farm.Fingerprint64

// Ref names a memory by its id, or by its key when Key is not empty.
type Ref struct {
	ID  uint64
	Key string
}

// ByID returns the Ref of memory id.
func ByID(id uint64) Ref { return Ref{ID: id} }

// ByKey returns the Ref of the memory with key k.
func ByKey(k string) Ref { return Ref{Key: k} }

func (r Ref) String() string {
	if r.Key != "" {
		return fmt.Sprintf("key %q", r.Key)
	}
	return fmt.Sprint(r.ID)
}

// checkKey enforces ErrBadKey.
func checkKey(k string) error {
	if len(k) == 0 || len(k) > MaxKeyLen {
		return fmt.Errorf("%w: got %d bytes", ErrBadKey, len(k))
	}
	return nil
}

// resolveLocked returns the id of the live (present and unexpired) memory
// r names, or an error wrapping ErrNoMemory.
// REQUIRES: c.mu held (for reading at least).
func (c *Collection) resolveLocked(r Ref, now int64) (uint64, memory, error) {
	id := r.ID
	if r.Key != "" {
		var ok bool
		if id, ok = c.keyIDLocked(r.Key); !ok {
			return 0, memory{}, fmt.Errorf("%w: key %q", ErrNoMemory, r.Key)
		}
	}
	m, ok := c.mems[id]
	if !ok || m.expiredAt(now) {
		return 0, memory{}, fmt.Errorf("%w: %v", ErrNoMemory, r)
	}
	return id, m, nil
}

// keyIDLocked returns the id of the memory holding key k (expired or not).
// REQUIRES: c.mu held.
func (c *Collection) keyIDLocked(k string) (uint64, bool) {
	id, ok := c.keys[keyFingerprint([]byte(k))]
	if !ok {
		return 0, false
	}
	if m, ok := c.mems[id]; !ok || m.key() != k {
		return 0, false // another key with the same fingerprint
	}
	return id, true
}

// indexKeyLocked records that memory id holds key k.
// REQUIRES: c.mu held for writing.
func (c *Collection) indexKeyLocked(id uint64, k string) {
	if k != "" {
		c.keys[keyFingerprint([]byte(k))] = id
	}
}

// unindexKeyLocked forgets key k if memory id holds it in the index.
// REQUIRES: c.mu held for writing.
func (c *Collection) unindexKeyLocked(id uint64, k string) {
	if k == "" {
		return
	}
	fp := keyFingerprint([]byte(k))
	if c.keys[fp] == id {
		delete(c.keys, fp)
	}
}

// checkAddExt validates an add's attributes, key and TTL (it takes no
// lock) and returns the attributes' compact form. A batch add calls it for
// every memory, as AddDeferred does for its one.
func checkAddExt(req *AddRequest) ([]byte, error) {
	attrs, err := validateAttrs(req.Attrs)
	if err != nil {
		return nil, err
	}
	if req.Key != "" {
		if err := checkKey(req.Key); err != nil {
			return nil, err
		}
	}
	if err := checkTTL(req.TTL); err != nil {
		return nil, err
	}
	return attrs, nil
}

// claimLocked checks the ids and keys of adds (reqs[i] to get ids[i]) as
// that many single adds in order would: an id or key a live memory holds
// is ErrIDExists or ErrKeyExists, as is one named earlier among them; a
// key whose fingerprint another key holds is ErrKeyCollision. It returns
// the expired memories that still hold one of the ids or keys, which the
// adds must delete (and log) first: to a client they are gone already. On
// failure it returns the index of the add at fault, and nothing changed.
// REQUIRES: c.mu held for writing.
func (c *Collection) claimLocked(reqs []AddRequest, ids []uint64, now int64) (purge []uint64, bad int, err error) {
	var batchKeys map[uint64]string // fingerprint -> key, of the adds before
	if len(reqs) > 1 {
		batchKeys = make(map[uint64]string)
	}
	var purged map[uint64]bool
	claim := func(id uint64) {
		if purged == nil {
			purged = make(map[uint64]bool)
		}
		if !purged[id] {
			purged[id] = true
			purge = append(purge, id)
		}
	}
	for i, req := range reqs {
		if m, ok := c.mems[ids[i]]; ok {
			if !m.expiredAt(now) {
				return nil, i, fmt.Errorf("%w: %d", ErrIDExists, ids[i])
			}
			claim(ids[i])
		}
		if req.Key == "" {
			continue
		}
		fp := keyFingerprint([]byte(req.Key))
		if k, ok := batchKeys[fp]; ok {
			if k == req.Key {
				return nil, i, fmt.Errorf("%w: %q (named earlier in the batch)", ErrKeyExists, req.Key)
			}
			return nil, i, fmt.Errorf("%w: %q and %q, earlier in the batch", ErrKeyCollision, req.Key, k)
		}
		if batchKeys != nil {
			batchKeys[fp] = req.Key
		}
		old, expired, err := c.checkNewKeyLocked(req.Key, now)
		if err != nil {
			return nil, i, err
		}
		if expired {
			claim(old)
		}
	}
	return purge, -1, nil
}

// checkNewKeyLocked checks that key k can be given to a new memory: it
// returns the id of an expired memory holding k's fingerprint (which the
// add must delete first; 0 and false when there is none), or
// ErrKeyExists, or ErrKeyCollision.
// REQUIRES: c.mu held for writing.
func (c *Collection) checkNewKeyLocked(k string, now int64) (uint64, bool, error) {
	id, ok := c.keys[keyFingerprint([]byte(k))]
	if !ok {
		return 0, false, nil
	}
	m, ok := c.mems[id]
	if !ok {
		return 0, false, nil // stale entry; never left by the apply functions
	}
	if m.expiredAt(now) {
		return id, true, nil
	}
	if m.key() == k {
		return 0, false, fmt.Errorf("%w: %q (memory %d)", ErrKeyExists, k, id)
	}
	return 0, false, fmt.Errorf("%w: %q and the key of memory %d", ErrKeyCollision, k, id)
}

// rebuildDerivedLocked rebuilds the key index and the expiry set from the
// memories, once recovery has replayed the log: a fuzzy checkpoint may
// hold a memory's key twice (before a delete and after a re-add), and the
// incremental upkeep of replay could then leave the wrong id indexed.
// Two live memories with one key (never written by memrl) are logged,
// and the higher id keeps the key.
// REQUIRES: c not yet shared.
func (c *Collection) rebuildDerivedLocked() {
	c.keys = make(map[uint64]uint64)
	c.expiring = make(map[uint64]int64)
	c.nextExpiry = 0
	for id, m := range c.mems {
		if m.ext == nil {
			continue
		}
		if k := m.ext.key; k != "" {
			fp := keyFingerprint([]byte(k))
			if old, ok := c.keys[fp]; ok {
				c.db.opts.Logf("memrl: recovery: collection %q: memories %d and %d share a key fingerprint", c.name, old, id)
				if old > id {
					continue
				}
			}
			c.keys[fp] = id
		}
		c.trackExpiryLocked(id, m.ext.expires)
	}
}
