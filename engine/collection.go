package engine

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/memrl/memrl/engine/filter"
	"github.com/memrl/memrl/ivfpq"
	"github.com/memrl/memrl/qtable"
	"github.com/memrl/memrl/wal"
)

// memory is a collection's record of one memory, apart from its utility
// (which lives in the collection's qtable).
type memory struct {
	row     uint32 // row of the vector file
	payLen  uint32
	payOff  uint64  // payload bytes [payOff, payOff+payLen) of the payload file
	created int64   // unix nanoseconds
	ext     *memExt // attributes, key and expiry (attrs.go); nil when it has none
}

// Collection is a named set of memories with one dimension, metric and
// learning parameters. Its methods are safe for concurrent use.
type Collection struct {
	db   *DB
	name string
	uid  uint64 // unique for the life of the database; names the folder
	cfg  Config
	dir  string

	// writeGate keeps the collection's writers off mu while a compaction's
	// committing checkpoint reads the collection under mu's read lock
	// (compact.go, swap): lockWriter (writers through lockLive, and the
	// end of an index build or save) passes it for reading before taking
	// mu, and the swap holds it for writing. A writer waiting on mu itself
	// would hold up every reader behind it (sync.RWMutex); one waiting
	// here does not. Lock order: DB.ckptMu, writeGate, DB.mu, mu.
	writeGate sync.RWMutex

	// mu guards every field below, and the contents of vecs and pays.
	// Adds, deletes and drops hold it for writing; retrievals, rewards and
	// reads hold it for reading. Rewards change Q in the qtable, whose
	// stripes have locks of their own.
	mu      sync.RWMutex
	dropped bool // set by Drop; every method then fails
	// snap is the snapshot catalog and the ghosts (snapshot.go).
	snap   snapState
	mems   map[uint64]memory // id -> memory
	rowIDs []uint64          // row -> id; meaningful for live rows only
	dead   *roaring.Bitmap   // rows of the vector file that hold no live memory
	// deleted holds the ids deleted (and not added again) since the last
	// checkpoint took them: the tombstones of the next delta checkpoint.
	deleted map[uint64]struct{}
	// liveIDs holds the keys of mems, ordered, for scans (scan.go).
	// INVARIANT: liveIDs == keys(mems).
	liveIDs *idSet
	// nextID is one above every id ever used: the id an ADD without ID
	// gets while it is at most MaxID. It is a uint64, so an add of MaxID
	// makes it MaxID+1 without wrapping; it is rebuilt identically by
	// replay (applyAddLocked) and stored in checkpoints.
	nextID uint64
	// aboveLive caches one above the highest live id (1 when none is
	// live), the id an ADD without ID falls back to once nextID has passed
	// MaxID; 0 when not known. Derived from mems, never stored.
	// INVARIANT: aboveLive == 0 or aboveLive == 1 + max(live ids) (1 if none).
	aboveLive uint64
	// keys maps key fingerprints to the id of the memory holding the key
	// (keys.go); expiring maps the id of every memory with an expiry to it,
	// and nextExpiry is at most the earliest of them (expiry.go).
	// INVARIANT: once recovery is done, keys and expiring describe exactly
	// the memories in mems.
	keys       map[uint64]uint64
	expiring   map[uint64]int64
	nextExpiry int64
	// indexed are the attribute fields declared for indexing, sorted
	// (filter_index.go); fidx holds their bitmaps by row, nil until
	// recovery is done (it is then built once from the attributes).
	// INVARIANT: once fidx is set, it indexes exactly the fields of
	// indexed, for the attributes of the memories in mems.
	indexed []string
	fidx    *filter.Index
	vecs    *vectorStore
	pays    *payloadStore
	index   phase1 // exactScan, or ivfPhase1 once an index is built

	// Index state (index.go).
	ivf           *ivfpq.Index   // the index in use, or nil
	trainedOn     int            // live memories when ivf was trained
	savedRows     uint32         // rows of ivf in its saved file
	building      bool           // a background build is running
	buildFailedAt int            // live memories when a build last failed; 0 if none
	saving        bool           // a background save is running
	retired       []*ivfpq.Index // replaced indexes, closed by closeRetired
	damage        indexDamage    // damage found in the index (index_damage.go); atomic, not guarded
	bg            sync.WaitGroup // background saves (not builds); not guarded

	prune pruneState // the background prune policy (prune_policy.go)

	q *qtable.Table // Q, visits, rewards: safe for concurrent use on its own

	// hist holds the memories' recent updates (history.go); it has locks
	// of its own, taken under the memory's qtable stripe.
	hist history
	// snapMu serialises the snapshot commands of the collection (snapshot,
	// rollback, delete), which write and read snapshot files without mu.
	// Lock order: snapMu before mu.
	snapMu sync.Mutex
	// gen is the generation of the collection's files (compact.go): 0
	// until the first compaction. cs is the compaction's state.
	gen uint64
	cs  compactState
	// xport pins the generations open exports read (collection_export.go).
	xport exportPins

	// acct holds the collection's figures of DataMemory (datamem.go),
	// refreshed by accountLocked; attrBytes is the attributes' part,
	// kept by the attribute index's hooks (filter_index.go). attrBytes
	// is guarded by mu.
	acct      dataAcct
	attrBytes int64
}

func (c *Collection) dim() int { return c.cfg.Dim }

// Name returns the collection's name.
func (c *Collection) Name() string { return c.name }

// Config returns the collection's configuration.
func (c *Collection) Config() Config { return c.cfg }

func collectionDir(root string, uid uint64) string {
	return filepath.Join(root, "collections", fmt.Sprintf("%016x", uid))
}

// openCollection opens (creating) the files of a collection holding nrows
// vector rows and paySize payload bytes. create says the collection is new
// (Create), not one recovery found (see openVectorStore).
func openCollection(db *DB, name string, uid uint64, cfg Config, nrows uint32, paySize uint64, create bool) (*Collection, error) {
	return openCollectionGen(db, name, uid, cfg, 0, nrows, paySize, create)
}

// openCollectionGen is openCollection of the files of generation gen
// (compact.go), the one a checkpoint recorded.
func openCollectionGen(db *DB, name string, uid uint64, cfg Config, gen uint64, nrows uint32, paySize uint64, create bool) (*Collection, error) {
	dir := collectionDir(db.dir, uid)
	if err := db.fs.MkdirAll(dir, 0o755); err != nil {
		return nil, fdError(err)
	}
	vecs, err := openVectorStoreGen(db.files, dir, gen, cfg.Dim, nrows, create, db.opts.MapFiles)
	if err != nil {
		return nil, err
	}
	pays, err := openPayloadStore(db.files, filepath.Join(dir, genName(payBase, payExt, gen)), paySize, vecs.hdr.legacyPayloadEnd)
	if err != nil {
		vecs.close()
		return nil, err
	}
	// Make the folder and its files durable names, so that a checkpoint
	// that later fsyncs their contents refers to files a crash keeps.
	for _, d := range []string{dir, filepath.Dir(dir), db.dir} {
		if err := db.fs.SyncDir(d); err != nil {
			vecs.close()
			pays.close()
			return nil, fdError(err)
		}
	}
	c := &Collection{
		db: db, name: name, uid: uid, cfg: cfg, dir: dir,
		mems: make(map[uint64]memory), liveIDs: newIDSet(), dead: roaring.New(), nextID: 1, deleted: make(map[uint64]struct{}),
		keys: make(map[uint64]uint64), expiring: make(map[uint64]int64),
		vecs: vecs, pays: pays, q: qtable.New(),
		indexed: cfg.Indexed, gen: gen,
	}
	c.index = exactScan{c}
	return c, nil
}

func (c *Collection) closeFiles() error {
	err := c.vecs.close()
	if perr := c.pays.close(); err == nil {
		err = perr
	}
	return err
}

// checkVector validates v for this collection and returns the vector to
// store: a copy, normalised for COSINE. Adds and queries both pass through
// it, so every vector a similarity is computed from obeys MaxComponent.
func (c *Collection) checkVector(v []float32) ([]float32, error) {
	if len(v) != c.cfg.Dim {
		return nil, fmt.Errorf("%w: got %d, collection %q has %d", ErrDimension, len(v), c.name, c.cfg.Dim)
	}
	bounded := c.cfg.Metric != Cosine
	var norm float64
	for i, x := range v {
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("%w: component %d is %v; components must be finite (no NaN or Inf)", ErrBadVector, i, f)
		}
		if bounded && math.Abs(f) > MaxComponent {
			return nil, fmt.Errorf("%w: component %d is %g; in an %v collection components must have magnitude at most %g",
				ErrBadVector, i, f, c.cfg.Metric, float64(MaxComponent))
		}
		norm += f * f
	}
	out := make([]float32, len(v))
	copy(out, v)
	if c.cfg.Metric == Cosine {
		if norm == 0 || math.IsInf(norm, 0) {
			return nil, fmt.Errorf("%w: a COSINE collection's vectors must not be all zero", ErrBadVector)
		}
		inv := 1 / math.Sqrt(norm)
		for i := range out {
			out[i] = float32(float64(out[i]) * inv)
		}
	}
	return out, nil
}

// lockWriter locks c for writing, after waiting at writeGate while a
// compaction commits (so that it does not queue on mu, holding up the
// readers behind it, while the compaction holds mu for reading).
func (c *Collection) lockWriter() {
	c.writeGate.RLock()
	c.mu.Lock()
	c.writeGate.RUnlock()
}

// lockLive locks c for writing (lockWriter) and fails if it was dropped.
func (c *Collection) lockLive() error {
	c.lockWriter()
	if c.dropped {
		c.mu.Unlock()
		return fmt.Errorf("%w: %q", ErrNoCollection, c.name)
	}
	return nil
}

// rlockLive locks c for reading and fails if it was dropped.
func (c *Collection) rlockLive() error {
	c.mu.RLock()
	if c.dropped {
		c.mu.RUnlock()
		return fmt.Errorf("%w: %q", ErrNoCollection, c.name)
	}
	return nil
}

// MaxID is the largest memory id: ids are replied as RESP integers, which
// are signed 64-bit, so ids stay below 2^63. It also keeps nextID (one
// above every id used, at most MaxID+1) from wrapping.
const MaxID = math.MaxInt64

// AddRequest is one memory to add.
type AddRequest struct {
	Vector  []float32
	Payload []byte
	ID      uint64 // used when HasID; otherwise the collection picks one
	HasID   bool
	Q       float64 // initial Q when HasQ; otherwise the collection's QINIT
	HasQ    bool
	Attrs   []byte        // JSON object of attributes, or empty for none (attrs.go)
	Key     string        // external key (1..MaxKeyLen bytes), or empty for none (keys.go)
	TTL     time.Duration // expires this long after the add (1ns..MaxTTL), or 0 for never (expiry.go)
	// Dedup, when HasDedup, makes the add return the id of a live memory
	// at least this similar instead of adding a near-copy (dedup.go);
	// DedupMerge says what becomes of that memory's Q. Single adds only.
	Dedup      float64
	HasDedup   bool
	DedupMerge DedupMerge
	// Replace makes the add an upsert by Key (replace.go): when a live
	// memory holds Key, its vector, attributes and payload are replaced
	// in place, keeping its id, Q, visits and history (Q, if given, is
	// then not used); otherwise the memory is added. It needs a Key, and
	// no ID, DEDUP or TTL. Single adds only.
	Replace bool
}

// Add stores a memory and returns its id once the change is durable (as the
// database's sync policy defines durable).
func (c *Collection) Add(req AddRequest) (uint64, error) {
	id, t, err := c.AddDeferred(req)
	if err != nil {
		return 0, err
	}
	return id, c.db.WaitDurable(t)
}

// AddDeferred is Add without the wait: it stores and logs the memory and
// returns its id and the ticket to pass to DB.WaitDurable before
// acknowledging it (see durable.go). It is a batch of one (batch_add.go).
func (c *Collection) AddDeferred(req AddRequest) (uint64, Ticket, error) {
	ids, t, _, err := c.addDeferred([]AddRequest{req})
	if err != nil {
		return 0, 0, err
	}
	return ids[0], t, nil
}

// peekAutoIDLocked returns the id an add without ID would get, or 0 if
// none is left (the rule is assignIDsLocked's); it does not fill the cache.
// REQUIRES: c.mu held at least for reading.
func (c *Collection) peekAutoIDLocked() uint64 {
	if c.nextID <= MaxID {
		return c.nextID
	}
	above := c.aboveLive
	if above == 0 {
		above = c.scanAboveLiveLocked()
	}
	if above > MaxID {
		return 0
	}
	return above
}

// scanAboveLiveLocked returns one above the highest live id, or 1 if none
// is live. It visits every memory; it runs only once nextID has passed
// MaxID, and then once per deletion of the highest id.
// REQUIRES: c.mu held at least for reading.
func (c *Collection) scanAboveLiveLocked() uint64 {
	var top uint64
	found := false
	for id := range c.mems {
		if !found || id > top {
			top, found = id, true
		}
	}
	if !found {
		return 1
	}
	return top + 1 // top <= MaxID, so this does not wrap
}

func (c *Collection) writeFilesLocked(r addRec) error {
	if err := c.vecs.put(r.row, r.vec); err != nil {
		return err
	}
	return c.pays.put(r.id, r.payOff, r.payload)
}

// unwriteFilesLocked forgets the rows writeFilesLocked wrote for an add
// that was not logged: nothing refers to them, and leaving the vector row
// counted would put a row with no memory into searches (and a gap into the
// index). The next add overwrites them.
// REQUIRES: c.mu held for writing since writeFilesLocked(r).
func (c *Collection) unwriteFilesLocked(r addRec) {
	c.vecs.nrows = min(c.vecs.nrows, r.row)
	c.pays.size = min(c.pays.size, r.payOff)
}

// applyAddLocked applies a logged add to memory (not the files). Replay
// calls it for records whose memory may already exist (a fuzzy checkpoint
// caught it), so it replaces rather than assumes.
// REQUIRES: c.mu held for writing.
func (c *Collection) applyAddLocked(r addRec) {
	if old, ok := c.mems[r.id]; ok {
		if old.row != r.row {
			c.dead.Add(old.row)
		}
		c.unindexKeyLocked(r.id, old.key())
		c.filterIndexRemoveLocked(old.row, old.attrs())
		// Replay only (a live add never reuses a live id): the log holds
		// every update after this add, and rebuilds the history from them.
		c.removeHistory(r.id)
	}
	// A re-added id cancels its pending tombstone: the add marks it dirty,
	// and the delta that takes the mark replaces the memory whole. Left in
	// place, the tombstone could land in a later delta than the memory's
	// new state and delete it there.
	delete(c.deleted, r.id)
	c.unpinLocked(r.id) // snapshot.go: only replay over a fuzzy checkpoint meets a ghost here
	// Replay's attributes alias the log's buffer: keep a copy.
	c.mems[r.id] = memory{row: r.row, payLen: uint32(len(r.payload)), payOff: r.payOff, created: r.created,
		ext: makeExt(bytes.Clone(r.attrs), r.key, r.expires)}
	c.indexKeyLocked(r.id, r.key)
	c.trackExpiryLocked(r.id, r.expires)
	c.filterIndexAddLocked(r.row, c.mems[r.id].attrs())
	c.liveIDs.add(r.id)
	defer c.accountLocked() // datamem.go
	for uint32(len(c.rowIDs)) <= r.row {
		c.rowIDs = append(c.rowIDs, 0)
	}
	c.rowIDs[r.row] = r.id
	c.dead.Remove(r.row)
	if r.id >= c.nextID {
		c.nextID = r.id + 1 // r.id <= MaxID: no wrap
	}
	if c.aboveLive != 0 && r.id >= c.aboveLive {
		c.aboveLive = r.id + 1
	}
	c.q.Put(r.id, qtable.Entry{Q: r.q, Updated: r.created})
}

// Delete removes the memories named and returns how many existed, once the
// change is durable.
func (c *Collection) Delete(ids []uint64) (int, error) {
	n, t, err := c.DeleteDeferred(ids)
	if err != nil {
		return 0, err
	}
	return n, c.db.WaitDurable(t)
}

// DeleteDeferred is Delete without the wait (see durable.go). The ticket is
// 0 when nothing was deleted.
func (c *Collection) DeleteDeferred(ids []uint64) (int, Ticket, error) {
	refs := make([]Ref, len(ids))
	for i, id := range ids {
		refs[i] = ByID(id)
	}
	return c.DeleteRefsDeferred(refs)
}

// DeleteRefsDeferred is DeleteDeferred of memories named by id or key
// (unknown ones are not counted). Expired memories named are deleted too,
// but not counted: to a client they were already gone.
func (c *Collection) DeleteRefsDeferred(refs []Ref) (int, Ticket, error) {
	if err := c.lockLive(); err != nil {
		return 0, 0, err
	}
	defer c.mu.Unlock()
	now := c.db.nowNanos()
	var found []uint64
	live := 0
	seen := make(map[uint64]bool, len(refs))
	for _, r := range refs {
		id := r.ID
		if r.Key != "" {
			var ok bool
			if id, ok = c.keyIDLocked(r.Key); !ok {
				continue
			}
		}
		if m, ok := c.mems[id]; ok && !seen[id] {
			seen[id] = true
			found = append(found, id)
			if !m.expiredAt(now) {
				live++
			}
		}
	}
	if len(found) == 0 {
		return 0, 0, nil
	}
	lsn, err := c.deleteIDsLocked(found)
	if err != nil {
		return 0, 0, err
	}
	return live, Ticket(lsn), nil
}

// deleteIDsLocked logs and applies the delete of ids, which must be
// present and distinct. REQUIRES: c.mu held for writing.
func (c *Collection) deleteIDsLocked(ids []uint64) (wal.LSN, error) {
	r := deleteRec{uid: c.uid, ids: ids}
	lsn, err := c.db.logFor(c.name, encodeDelete(r))
	if err != nil {
		return 0, err
	}
	c.applyDeleteLocked(r)
	return lsn, nil
}

// REQUIRES: c.mu held for writing.
func (c *Collection) applyDeleteLocked(r deleteRec) {
	defer c.accountLocked() // datamem.go
	for _, id := range r.ids {
		if m, ok := c.mems[id]; ok {
			c.pinIfHeldLocked(id, m) // snapshot.go: a snapshot holding it keeps it as a ghost
			c.dead.Add(m.row)
			c.filterIndexRemoveLocked(m.row, m.attrs())
			c.unindexKeyLocked(id, m.key())
			delete(c.expiring, id)
			delete(c.mems, id)
			c.liveIDs.remove(id)
			c.q.Delete(id)
			c.removeHistory(id) // history.go; a ghost's would be kept
			c.deleted[id] = struct{}{}
			if id+1 == c.aboveLive {
				c.aboveLive = 0 // the highest live id is gone: rescan when needed
			}
		}
	}
}

// Reward applies the temporal-difference update
//
//	Q ← Q + α(r + γ·nextQ − Q)
//
// to every memory named (each once, however often it is named), counts a
// visit, and returns the new Q of each id in the order given. nextQ is used
// only when the collection's γ is not 0; nil means 0. Each memory's update is
// atomic; concurrent rewards lose no update. If any id is unknown nothing
// changes.
func (c *Collection) Reward(reward float64, ids []uint64, nextQ *float64) ([]float64, error) {
	qs, t, err := c.RewardDeferred(reward, ids, nextQ)
	if err != nil {
		return nil, err
	}
	if err := c.db.WaitDurable(t); err != nil {
		return nil, err
	}
	return qs, nil
}

func applyQ(e *qtable.Entry, r qRec) {
	e.Q, e.Visits, e.LastReward, e.RewardSum, e.Updated = r.q, r.visits, r.lastReward, r.rewardSum, r.updated
}

// MemoryInfo is what Get returns about a memory.
type MemoryInfo struct {
	ID         uint64
	Q          float64
	Visits     uint64
	LastReward float64
	MeanReward float64
	Created    time.Time
	Updated    time.Time
	Payload    []byte
	Vector     []float32 // as stored: normalised for COSINE
	Attrs      []byte    // compact JSON object, or nil; shared: do not modify
	Key        string    // external key, or ""
	Expires    time.Time // when it expires; zero for never
}

// Get returns a memory.
func (c *Collection) Get(id uint64) (MemoryInfo, error) { return c.GetRef(ByID(id)) }

// GetRef returns the memory named by id or key. An expired memory is not
// returned (ErrNoMemory), even before the sweeper deletes it.
func (c *Collection) GetRef(r Ref) (MemoryInfo, error) {
	if err := c.rlockLive(); err != nil {
		return MemoryInfo{}, err
	}
	defer c.mu.RUnlock()
	id, m, err := c.resolveLocked(r, c.db.nowNanos())
	if err != nil {
		return MemoryInfo{}, err
	}
	e, _ := c.q.Get(id)
	p, err := c.pays.get(id, m.payOff, m.payLen)
	if err != nil {
		return MemoryInfo{}, c.reportLocked(err)
	}
	if err := c.vecs.checkRow(m.row); err != nil {
		return MemoryInfo{}, c.reportLocked(fmt.Errorf("memory %d: %w", id, err))
	}
	mi := MemoryInfo{
		ID: id, Q: e.Q, Visits: e.Visits, LastReward: e.LastReward, MeanReward: e.MeanReward(),
		Created: time.Unix(0, m.created), Updated: time.Unix(0, e.Updated), Payload: p,
		Vector: append([]float32(nil), c.vecs.row(m.row)...),
		Attrs:  m.attrs(), Key: m.key(), // immutable (memExt): shared, not copied
	}
	if x := m.expires(); x != 0 {
		mi.Expires = time.Unix(0, x)
	}
	return mi, nil
}

// Info describes a collection.
type Info struct {
	Name string
	Config
	Count     int    // live memories
	Rows      uint32 // rows of the vector file, live or dead
	NextID    uint64 // the id an add without ID would get; 0 when none is left
	Index     string // "flat" (exact scan) or the IVF-PQ index in use; "(building ivfpq)" or "(retraining)" is appended while a build runs, "(damaged)" or "(damaged: rebuilding)" to an index found damaged
	PayloadMB float64
	Keys      int // memories with a key
	Expiring  int // memories with an expiry (expired ones included until swept)
	// IndexDamage counts the times since Open the collection's IVF-PQ
	// index was found damaged, at open or later (index_damage.go); each
	// damaged index is replaced by a rebuild.
	IndexDamage uint64
}

// Info returns the collection's description.
func (c *Collection) Info() (Info, error) {
	if err := c.rlockLive(); err != nil {
		return Info{}, err
	}
	defer c.mu.RUnlock()
	index := "flat"
	if p, ok := c.index.(ivfPhase1); ok {
		index = p.describe()
		switch damaged := c.indexDamagedLocked(); {
		case damaged && c.building:
			index += " (damaged: rebuilding)"
		case damaged:
			index += " (damaged)"
		case c.building:
			index += " (retraining)"
		}
	} else if c.building {
		index = "flat (building ivfpq)"
	}
	cfg := c.cfg
	cfg.Indexed = slices.Clone(c.indexed) // the current fields, not those of the create
	return Info{
		Name: c.name, Config: cfg, Count: len(c.mems), Rows: c.vecs.nrows, NextID: c.peekAutoIDLocked(),
		Index: index, PayloadMB: float64(c.pays.size) / (1 << 20),
		Keys: len(c.keys), Expiring: len(c.expiring), IndexDamage: c.damage.found.Load(),
	}, nil
}
