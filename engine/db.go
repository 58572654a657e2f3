package engine

import (
	"errors"
	"fmt"
	"log"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memrl/memrl/vfs"
	"github.com/memrl/memrl/wal"
)

// Options configure Open. The zero value is usable: SyncAlways, the OS file
// system, checkpoints every 5 minutes or 256 MiB of log.
type Options struct {
	// FS is the file system; nil means the operating system's.
	FS vfs.FS
	// Sync is the WAL durability policy; the zero value is wal.SyncAlways:
	// a method returns only once its change is fsynced.
	Sync wal.SyncPolicy
	// SyncInterval is the fsync period of wal.SyncInterval; <= 0 means
	// the WAL's default.
	SyncInterval time.Duration
	// SegmentSize is the WAL segment size; <= 0 means the WAL's default.
	SegmentSize int64
	// CheckpointInterval is the longest time between background
	// checkpoints; 0 means 5 minutes, < 0 disables them (Close still
	// checkpoints).
	CheckpointInterval time.Duration
	// CheckpointBytes triggers a background checkpoint once the log has
	// grown this much since the last one; 0 means 256 MiB, < 0 disables.
	CheckpointBytes int64
	// Logf receives recovery reports and background errors; nil means the
	// standard logger.
	Logf func(format string, args ...any)
	// MaxOpenFiles caps the collection files (vectors, their checksums,
	// payloads) held open at once; the least recently used are closed to
	// open others, so any number of collections needs a bounded number of
	// descriptors. 0 means DefaultMaxOpenFiles; the log's own files, and
	// the IVF-PQ index files (one per indexed collection), are not counted.
	MaxOpenFiles int
	// MaxCollections caps how many collections Create makes
	// (ErrTooManyCollections); 0 means DefaultMaxCollections, < 0 no cap.
	// Recovery opens every collection the log and checkpoint hold, even
	// past the cap.
	MaxCollections int
	// Now is the clock expiry is measured with (expiry.go); nil means
	// time.Now. Tests give a fake one.
	Now func() time.Time
	// SweepInterval is how often the sweeper deletes expired memories; 0
	// means DefaultSweepInterval, < 0 disables it (expired memories are
	// still never returned).
	SweepInterval time.Duration
	// HistoryLen is how many recent updates each memory keeps for
	// Collection.History (history.go); 0 means DefaultHistoryLen, < 0
	// keeps none. At most MaxHistoryLen (ErrBadHistoryLen). A database
	// reopened with a smaller value drops the oldest entries beyond it.
	HistoryLen int
	// PruneInterval is how often the pruner looks for collections whose
	// prune policy is due (prune_policy.go); 0 means
	// DefaultPruneInterval, < 0 disables it (RunPrunePolicies still works).
	PruneInterval time.Duration
	// OnPrune, if set, is called after each run of a prune policy, once
	// its deletes are durable, with the collection's name and how many
	// memories it pruned (tests wait on it). It must not block for long:
	// it runs on the pruner's goroutine.
	OnPrune func(coll string, pruned int)
	// CompactShare starts a background compaction of a collection
	// (compact_trigger.go) once the share of its vector rows that hold no
	// live memory (and that a compaction would reclaim) reaches it, and
	// they number at least CompactMinRows. 0 means DefaultCompactShare,
	// < 0 disables the trigger (MEM.COMPACT still compacts).
	CompactShare float64
	// CompactMinRows is the fewest reclaimable rows that start a
	// compaction; 0 means DefaultCompactMinRows.
	CompactMinRows int
	// ExactWrites makes the writes that search (MEM.ADD … DEDUP) scan
	// exactly instead of using an IVF-PQ index, so that what they change
	// depends only on the data: replicas applying the same commands
	// (package replica) build their indexes each on its own, at different
	// times, and must still choose the same memory. It costs a full scan
	// per deduplicated add on large collections.
	ExactWrites bool
	// MapFiles reads each collection's vectors and IVF-PQ index through
	// shared mappings of their files instead of keeping copies of them in
	// memory advised for huge pages (the default, vfs.AllocResident). A
	// mapping lets the kernel evict them under memory pressure and opens
	// without the copies; the copies make a search's scattered reads TLB
	// hits: at a million memories the re-rank of a retrieval through the
	// server took 62 µs with the mapping and 7 µs with the copy
	// (engine/rowmem.go).
	MapFiles bool
	// AcceptLogGap opens a database whose write-ahead log does not reach
	// back to its checkpoint (ErrLogGap: wal/ emptied, truncated, restored
	// from an older copy, or its oldest segments lost). The records
	// missing from the log are lost; Open logs the gap as a WARNING,
	// reports it in Recovery.LogGap, and numbers new records above the
	// checkpoint. memrl serve --accept-log-gap sets it.
	AcceptLogGap bool
	// RestoredSnapshot says the folder is a full checkpoint restored
	// without its log, one that covers every record (a replica
	// installing a raft snapshot, package replica): an empty or absent
	// log is then the expected start, numbered from the checkpoint's LSN,
	// not a gap. A log that holds records and does not reach the
	// checkpoint is still ErrLogGap.
	RestoredSnapshot bool
}

// DefaultMaxCollections is the default of Options.MaxCollections. Each
// collection costs memory and a mapping of its vector file (the kernel
// allows about 65,000 mappings per process by default), so a client must
// not be able to create them without bound.
const DefaultMaxCollections = 4096

// DB is a memrl database: a folder of named collections and the write-ahead
// log that makes their changes durable. Its methods are safe for concurrent
// use. You must Close a DB to stop its background checkpoints and release
// its files; Close checkpoints, so the next Open replays little.
type DB struct {
	// acct holds the sums of the open collections' DataMemory
	// (datamem.go); safe for concurrent use.
	acct dataAcct

	dir  string
	fs   vfs.FS
	opts Options
	log  *wal.Log
	lock *dirLock
	// files keeps the collections' files open, a bounded number at a time.
	files *fileCache

	// ckptMu serialises checkpoints with each other and with Drop, which
	// closes a collection's files. It guards chain, ckptErr, and the synced sizes
	// of the collections' vector and payload files.
	ckptMu sync.Mutex
	// chain describes the checkpoint files on disk (checkpoint.go).
	chain ckptChain
	// ckptStatus is what CheckpointStatus returns; written under ckptMu,
	// read without it.
	ckptStatus atomic.Pointer[CheckpointStatus]
	// ckptErr is the sticky failure that stopped checkpoints (a failed
	// sync of a file a checkpoint depends on), or nil.
	ckptErr error

	// mu guards colls, byUID, nextUID, closed and closing. Create and Drop hold it
	// for writing while they log and apply their record, so the log order
	// of collection changes is the order they were applied in.
	mu      sync.RWMutex
	colls   map[string]*Collection
	byUID   map[uint64]*Collection
	nextUID uint64
	closed  bool
	closing bool // set by the first Close, so that a concurrent one fails

	stop      chan struct{} // closed by Close to end the checkpointer, the sweeper and the pruner
	done      chan struct{} // closed when the checkpointer has ended
	sweepDone chan struct{} // closed when the sweeper has ended
	pruneDone chan struct{} // closed when the pruner has ended (prune_policy.go)
	// compactDone is closed when the compaction trigger has ended;
	// compacts counts running compactions (compact.go), which Close waits
	// for after closing stop (they stop at their next chunk).
	compactDone chan struct{}
	compacts    sync.WaitGroup

	// groups are the open atomic groups (group.go).
	groups groupState

	// imports tracks collection imports (collection_import.go).
	imports importState

	// Recovery describes what Open found: the checkpoint, the records
	// replayed and any torn tail cut off the log.
	Recovery RecoveryInfo
}

// RecoveryInfo reports what Open did to bring the database back.
type RecoveryInfo struct {
	CheckpointLSN   uint64        // WAL position the checkpoint covers up to
	DeltasApplied   int           // delta checkpoints applied over the full one
	RecordsReplayed int           // log records applied on top of it
	TornTail        string        // non-empty when a torn log tail was cut off
	LogGap          string        // non-empty when a gap was accepted (Options.AcceptLogGap)
	Duration        time.Duration // time Open took

	// GroupsDropped counts the transactions (atomic groups, group.go)
	// whose commit record was not in the log: their GroupRecordsDropped
	// records were not applied.
	GroupsDropped       int
	GroupRecordsDropped int
}

// Open opens the database in dir, creating it if needed, and recovers it:
// the checkpoint is loaded, the log replayed on top of it, a torn last
// record cut off (and reported in db.Recovery). Corruption anywhere else is
// an error: memrl never opens a database it cannot read whole.
func Open(dir string, opts Options) (*DB, error) {
	start := time.Now()
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	if opts.Logf == nil {
		opts.Logf = log.Printf
	}
	if opts.CheckpointInterval == 0 {
		opts.CheckpointInterval = 5 * time.Minute
	}
	if opts.CheckpointBytes == 0 {
		opts.CheckpointBytes = 256 << 20
	}
	if opts.MaxOpenFiles <= 0 {
		opts.MaxOpenFiles = DefaultMaxOpenFiles
	}
	if opts.MaxCollections == 0 {
		opts.MaxCollections = DefaultMaxCollections
	}
	if opts.SweepInterval == 0 {
		opts.SweepInterval = DefaultSweepInterval
	}
	if opts.HistoryLen > MaxHistoryLen {
		return nil, fmt.Errorf("%w: %d", ErrBadHistoryLen, opts.HistoryLen)
	}
	if opts.PruneInterval == 0 {
		opts.PruneInterval = DefaultPruneInterval
	}
	if opts.CompactShare == 0 {
		opts.CompactShare = DefaultCompactShare
	}
	if opts.CompactMinRows <= 0 {
		opts.CompactMinRows = DefaultCompactMinRows
	}
	fs := opts.FS
	if err := fs.MkdirAll(filepath.Join(dir, "collections"), 0o755); err != nil {
		return nil, err
	}
	lock, err := lockDir(fs, dir)
	if err != nil {
		return nil, err
	}
	db := &DB{
		dir: dir, fs: fs, opts: opts, lock: lock, nextUID: 1, files: newFileCache(fs, opts.MaxOpenFiles),
		colls: make(map[string]*Collection), byUID: make(map[uint64]*Collection),
		stop: make(chan struct{}), done: make(chan struct{}), sweepDone: make(chan struct{}),
		pruneDone:   make(chan struct{}),
		compactDone: make(chan struct{}),
	}
	if err := db.recover(); err != nil {
		db.closeFiles()
		lock.release()
		return nil, err
	}
	db.Recovery.Duration = time.Since(start)
	go db.checkpointer()
	go db.sweeper()
	go db.pruner()
	go db.compactTrigger()
	return db, nil
}

func (db *DB) closeFiles() {
	for _, c := range db.byUID {
		c.closeFiles()
	}
	if db.log != nil {
		db.log.Close()
	}
}

// Create makes a new, empty collection.
func (db *DB) Create(name string, cfg Config) error {
	if err := validName(name); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg.Indexed, _ = checkIndexed(cfg.Indexed) // sorted, unique
	db.mu.Lock()
	if db.closed {
		db.mu.Unlock()
		return ErrClosed
	}
	if _, ok := db.colls[name]; ok {
		db.mu.Unlock()
		return fmt.Errorf("%w: %q", ErrCollectionExists, name)
	}
	if max := db.opts.MaxCollections; max > 0 && len(db.colls) >= max {
		db.mu.Unlock()
		return fmt.Errorf("%w: the database holds %d", ErrTooManyCollections, len(db.colls))
	}
	r := createRec{uid: db.nextUID, name: name, cfg: cfg}
	// A uid is fresh, but a crash may have lost the create record of an
	// earlier collection that had the same uid; its files must not be
	// mistaken for this one's (its saved index above all).
	if err := db.fs.RemoveAll(collectionDir(db.dir, r.uid)); err != nil {
		db.mu.Unlock()
		return fdError(err)
	}
	c, err := openCollection(db, name, r.uid, cfg, 0, 0, !createLegacy)
	if err != nil {
		db.mu.Unlock()
		return err
	}
	lsn, err := db.logFor(r.name, encodeCreate(r))
	if err != nil {
		c.closeFiles()
		db.mu.Unlock()
		return err
	}
	c.rebuildFilterIndexLocked() // empty: the fields, no rows
	db.addCollectionLocked(c)
	db.mu.Unlock()
	return db.log.WaitDurable(lsn)
}

// createLegacy, set by tests only, makes Create make a collection in the
// format from before checksums, as an older memrl did.
var createLegacy bool

// REQUIRES: db.mu held for writing.
func (db *DB) addCollectionLocked(c *Collection) {
	db.colls[c.name] = c
	db.byUID[c.uid] = c
	if c.uid >= db.nextUID {
		db.nextUID = c.uid + 1
	}
}

// Drop deletes a collection and all its memories. Its files are removed by
// the next checkpoint that no longer needs them.
func (db *DB) Drop(name string) error {
	db.ckptMu.Lock()
	defer db.ckptMu.Unlock()
	db.mu.Lock()
	if db.closed {
		db.mu.Unlock()
		return ErrClosed
	}
	c, ok := db.colls[name]
	if !ok {
		db.mu.Unlock()
		return fmt.Errorf("%w: %q", ErrNoCollection, name)
	}
	c.mu.Lock() // waits for the collection's in-flight operations
	lsn, err := db.logFor(c.name, encodeDrop(c.uid))
	if err != nil {
		c.mu.Unlock()
		db.mu.Unlock()
		return err
	}
	db.dropLocked(c)
	c.mu.Unlock()
	db.mu.Unlock()
	c.closeIndex(false)
	c.closeFiles()
	return db.log.WaitDurable(lsn)
}

// dropLocked removes c from the database. Every method of c fails from now
// on, so its files and index can be closed once the locks are released.
// REQUIRES: db.mu and c.mu held for writing.
func (db *DB) dropLocked(c *Collection) {
	c.unaccountLocked()
	c.dropped = true
	delete(db.colls, c.name)
	delete(db.byUID, c.uid)
}

// Collection returns the named collection.
func (db *DB) Collection(name string) (*Collection, error) {
	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.closed {
		return nil, ErrClosed
	}
	c, ok := db.colls[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrNoCollection, name)
	}
	return c, nil
}

// List returns the collection names, sorted.
func (db *DB) List() []string {
	db.mu.RLock()
	names := make([]string, 0, len(db.colls))
	for n := range db.colls {
		names = append(names, n)
	}
	db.mu.RUnlock()
	sort.Strings(names)
	return names
}

// SyncPolicy returns the WAL's durability policy.
func (db *DB) SyncPolicy() wal.SyncPolicy { return db.opts.Sync }

// Err returns the sticky error that stopped the database accepting writes
// (a failed write or fsync of the log), or nil.
func (db *DB) Err() error { return db.log.Err() }

// Close stops background work, checkpoints, and closes every file. Methods
// called after Close fail with ErrClosed (or a closed-log error).
func (db *DB) Close() error {
	db.mu.Lock()
	if db.closed || db.closing {
		db.mu.Unlock()
		return ErrClosed
	}
	db.closing = true
	db.mu.Unlock()
	close(db.stop)
	<-db.done
	<-db.sweepDone
	<-db.pruneDone
	<-db.compactDone
	db.compacts.Wait()
	var err error
	if db.log.Err() == nil {
		err = db.Checkpoint()
	}
	db.ckptMu.Lock()
	defer db.ckptMu.Unlock()
	db.mu.Lock()
	db.closed = true
	for _, c := range db.byUID {
		c.mu.Lock()
		c.unaccountLocked()
		c.dropped = true // not dropped, but closed: methods fail the same way
		c.mu.Unlock()
		c.closeIndex(true)
		c.closeFiles()
	}
	db.mu.Unlock()
	if cerr := db.log.Close(); err == nil && !errors.Is(cerr, wal.ErrClosed) {
		err = cerr
	}
	db.lock.release()
	return err
}
