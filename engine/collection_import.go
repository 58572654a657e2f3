package engine

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sync"

	"github.com/memrl/memrl/engine/histlog"
	"github.com/memrl/memrl/engine/image"
	"github.com/memrl/memrl/engine/record"
	"github.com/memrl/memrl/ivfpq"
	"github.com/memrl/memrl/vfs"
	"github.com/memrl/memrl/wal"
)

// ErrBadImage wraps every refusal of a collection image whose framing is
// intact but whose content is not a collection this build can import
// (image.ErrCorrupt covers damaged framing; ImportCollection's errors wrap
// one or the other, or ErrCorruptCheckpoint for a damaged state file).
var ErrBadImage = errors.New("engine: invalid collection image")

// recImport logs an imported collection: its files, and the state file
// import.ckpt, are in its folder, complete and fsynced, before the record
// is logged:
//
//	recImport u8 | version u8 = 1 | uid u64 | name u16-len bytes
//
// Replay opens the collection from them (loadImportLocked); the first
// checkpoint after the record holds the collection like any other (its
// memories are all marked dirty), and removes import.ckpt. The body's
// codec is package record's (EncodeImport).
const recImport = record.TypeImport

// Names in an importing collection's folder.
const (
	// importStateName is the state file: the image's one-collection
	// checkpoint, kept until a checkpoint holds the collection.
	importStateName = "import.ckpt"
	// importMarkerName marks a folder whose import has not been logged
	// yet: made durable before any other file of the import, removed once
	// the record is durable. Open removes a marked folder of a collection
	// it does not know (a crash cut the import short).
	importMarkerName = "IMPORTING"
)

// importState is the database's bookkeeping of imports.
type importState struct {
	// mu guards staging and states.
	mu sync.Mutex
	// staging holds the uids of the imports under way: their folders
	// exist but no record names them yet, so a checkpoint must not remove
	// them as orphans (removeOrphansLocked).
	staging map[uint64]bool
	// states maps the uid of a collection whose import.ckpt is still
	// needed to its record's LSN: replay reads the file until a
	// checkpoint whose position is past that LSN commits.
	states map[uint64]uint64
}

func (s *importState) stage(uid uint64, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.staging == nil {
		s.staging = make(map[uint64]bool)
	}
	if on {
		s.staging[uid] = true
	} else {
		delete(s.staging, uid)
	}
}

func (s *importState) logged(uid, lsn uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.states == nil {
		s.states = make(map[uint64]uint64)
	}
	s.states[uid] = lsn
}

// stagingUIDs returns the uids of the imports under way.
func (s *importState) stagingUIDs() []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]uint64, 0, len(s.staging))
	for uid := range s.staging {
		out = append(out, uid)
	}
	return out
}

// releaseImportStatesLocked removes the state files that a checkpoint
// committed at position lsn made unnecessary: those of imports logged
// before it (replay starts at lsn, so it never reads them again).
// REQUIRES: db.ckptMu held, the checkpoint at lsn committed.
func (db *DB) releaseImportStatesLocked(lsn wal.LSN) {
	s := &db.imports
	s.mu.Lock()
	var done []uint64
	for uid, at := range s.states {
		if at < uint64(lsn) {
			done = append(done, uid)
			delete(s.states, uid)
		}
	}
	s.mu.Unlock()
	for _, uid := range done {
		dir := collectionDir(db.dir, uid)
		if err := db.fs.Remove(filepath.Join(dir, importStateName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			db.opts.Logf("memrl: removing the import state of collection folder %s: %v", filepath.Base(dir), err)
		}
	}
}

func encodeImport(uid uint64, name string) []byte { return record.EncodeImport(uid, name) }

func decodeImport(rec []byte) (uid uint64, name string, err error) { return record.DecodeImport(rec) }

// ImportCollection reads a whole collection image (Export.WriteTo) from r
// and creates collection name holding its state. It verifies everything
// (every frame's checksum, every file against its close frame, the image
// against its end frame, the state file's checksum and bounds, the files'
// sizes) before the collection becomes visible, and returns only once it
// is durable: its files and state file fsynced, then a log record naming
// them (recImport) fsynced. A damaged, truncated or invalid image is
// refused (errors wrapping image.ErrCorrupt, image.ErrVersion,
// ErrBadImage or ErrCorruptCheckpoint) and changes nothing: the folder it
// was written to is removed, and one a crash leaves behind is removed by
// the next Open. An existing name is ErrCollectionExists.
//
// The collection's state is the image's alone: nothing is taken from the
// clock or the database (its uid, which names its folder, is the only
// local choice), so databases importing the same bytes hold the same
// memories, ids, next id, Q and history. Its vector rows keep their
// numbers (dead rows included, as in the source; a compaction reclaims
// them). The IVF-PQ index is the image's, caught up with the rows added
// after its last save as at a restart; without one, a large IVF-PQ
// collection builds its index in the background.
//
// Memory: the image is streamed to files a frame at a time; the state file
// is then read whole, as recovery reads a checkpoint (about 100 bytes a
// memory), and the vectors are loaded as at Open.
func (db *DB) ImportCollection(name string, r io.Reader) (*Collection, error) {
	if err := validName(name); err != nil {
		return nil, err
	}
	p, err := db.prepareImport(name, r)
	if err != nil {
		return nil, err
	}
	return p.Commit(name)
}

// errImportDone: Commit or Abort of a PreparedImport already committed or
// aborted.
var errImportDone = errors.New("engine: import already committed or aborted")

// PreparedImport is an image read, verified and opened (PrepareImport),
// not yet a collection of the database: ImportCollection in two steps, so
// that the long one (reading, writing and verifying the image: seconds
// at a million memories) can run where it stalls nothing, and the short
// one (Commit: a log record and an index opened) where the order of
// collection changes is decided (a raft FSM). It holds the collection's
// files open and its state in memory until Commit or Abort, one of which
// the caller must call (before closing the database); a process that
// stops first leaves a marked folder, which the next Open removes. Safe
// for concurrent use.
type PreparedImport struct {
	db  *DB
	uid uint64
	dir string

	mu sync.Mutex  // guards c
	c  *Collection // nil once committed or aborted
}

// PrepareImport reads and verifies a whole image and opens the collection
// it holds, invisible: ImportCollection without its last step. Its errors
// are ImportCollection's.
func (db *DB) PrepareImport(r io.Reader) (*PreparedImport, error) {
	return db.prepareImport("", r)
}

// prepareImport is PrepareImport, failing early when name (if not empty)
// is taken.
func (db *DB) prepareImport(name string, r io.Reader) (*PreparedImport, error) {
	db.mu.Lock()
	if db.closed || db.closing {
		db.mu.Unlock()
		return nil, ErrClosed
	}
	if _, ok := db.colls[name]; ok && name != "" {
		db.mu.Unlock()
		return nil, fmt.Errorf("%w: %q", ErrCollectionExists, name)
	}
	if max := db.opts.MaxCollections; max > 0 && len(db.colls) >= max {
		db.mu.Unlock()
		return nil, fmt.Errorf("%w: the database holds %d", ErrTooManyCollections, len(db.colls))
	}
	// The uid is taken now, so no create meets this folder.
	uid := db.nextUID
	db.nextUID++
	db.imports.stage(uid, true)
	db.mu.Unlock()

	p := &PreparedImport{db: db, uid: uid, dir: collectionDir(db.dir, uid)}
	if name == "" {
		name = "(import)" // named by Commit; this one appears in logs only
	}
	c, err := db.importStaged(name, uid, p.dir, r)
	if err != nil {
		p.discard(c)
		return nil, err
	}
	p.c = c
	return p, nil
}

// Commit makes the prepared collection collection name of the database,
// durably (ImportCollection's last step): ErrCollectionExists if the name
// is taken by then. On any error the import is aborted (its files
// removed).
func (p *PreparedImport) Commit(name string) (*Collection, error) {
	p.mu.Lock()
	c := p.c
	p.c = nil
	p.mu.Unlock()
	if c == nil {
		return nil, errImportDone
	}
	err := validName(name)
	if err == nil {
		c.name = name // not yet shared
		err = p.db.commitImport(c)
	}
	if err != nil {
		p.discard(c)
		return nil, err
	}
	p.db.imports.stage(p.uid, false) // known by its uid now
	return c, nil
}

// Abort drops the prepared import: its files are removed.
func (p *PreparedImport) Abort() error {
	p.mu.Lock()
	c := p.c
	p.c = nil
	p.mu.Unlock()
	if c == nil {
		return errImportDone
	}
	p.discard(c)
	return nil
}

// discard closes c (if not nil) and removes the import's folder.
func (p *PreparedImport) discard(c *Collection) {
	if c != nil {
		// Its figures went into the database's DataMemory when it was
		// opened (accountLocked); take them out.
		c.mu.Lock()
		c.unaccountLocked()
		c.dropped = true
		c.mu.Unlock()
		c.closeIndex(false)
		c.closeFiles()
	}
	if err := vfs.RemoveAllPaced(p.db.fs, p.dir); err != nil {
		p.db.opts.Logf("memrl: import: removing its files: %v", err)
	}
	p.db.imports.stage(p.uid, false)
}

// importStaged writes the image's files into dir (marked as an import in
// progress), verifies them, and opens the collection from them, not yet
// visible. On an error the caller removes dir (and closes c if not nil).
func (db *DB) importStaged(name string, uid uint64, dir string, r io.Reader) (*Collection, error) {
	fsys := db.fs
	if err := fsys.RemoveAll(dir); err != nil {
		return nil, fdError(err)
	}
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return nil, fdError(err)
	}
	if err := fsys.SyncDir(filepath.Dir(dir)); err != nil {
		return nil, err
	}
	// The marker is durable before any other file of the import is
	// created, so a crash that leaves any of them leaves it too.
	if err := vfs.WriteFileAtomic(fsys, filepath.Join(dir, importMarkerName), nil); err != nil {
		return nil, err
	}
	meta, err := db.receiveImage(uid, dir, r)
	if err != nil {
		return nil, err
	}
	state, err := vfs.ReadFile(fsys, filepath.Join(dir, importStateName))
	if err != nil {
		return nil, err
	}
	cc, err := decodeImportState(state, meta)
	state = nil
	if err != nil {
		return nil, err
	}
	c, err := db.openImportedLocked(name, uid, cc)
	if err != nil {
		return nil, err
	}
	// What recovery does once replay is done (recover.go).
	c.finishSnapshotsLocked()
	c.rebuildDeadLocked()
	c.rebuildDerivedLocked()
	c.rebuildFilterIndexLocked()
	if err := c.openChecksLocked(); err != nil {
		return c, err
	}
	return c, nil
}

// receiveImage streams the image's files into dir, fsyncs them and the
// folders, and returns the meta file. Every file's bytes are checked
// against its close frame, and the image against its end frame, before it
// returns nil.
func (db *DB) receiveImage(uid uint64, dir string, r io.Reader) (xferMetaRec, error) {
	fsys := db.fs
	var meta xferMetaRec
	ir, err := image.NewReader(r)
	if err != nil {
		return meta, err
	}
	buf := make([]byte, xferChunk)
	// write streams the current file of ir into path and returns its size.
	write := func(path string, head []byte) (int64, error) {
		f, err := fsys.Create(path)
		if err != nil {
			return 0, fdError(err)
		}
		defer f.Close()
		n := int64(0)
		if len(head) > 0 {
			if _, err := f.Write(head); err != nil {
				return 0, err
			}
		}
		for {
			k, rerr := ir.Read(buf)
			if k > 0 {
				if _, err := f.Write(buf[:k]); err != nil {
					return 0, err
				}
				n += int64(k)
			}
			if rerr == io.EOF {
				break
			}
			if rerr != nil {
				return 0, rerr
			}
		}
		return n, f.Sync()
	}
	want := func(what string, got, n int64) error {
		if got != n {
			return fmt.Errorf("%w: %s of %d bytes, the meta says %d", ErrBadImage, what, got, n)
		}
		return nil
	}
	seen := make(map[uint8]bool)
	last := uint8(0)
	snaps := make(map[uint64]bool)
	var snapDir, indexDir string
	for {
		h, err := ir.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return meta, err
		}
		// Meta, state, vectors, sums and payloads, once each and in
		// that order; then any snapshot files; then at most one index.
		inPlace := h.Kind == last+1
		switch h.Kind {
		case xferSnapshot:
			inPlace = last == xferPayloads || last == xferSnapshot
		case xferIndex:
			inPlace = last == xferPayloads || last == xferSnapshot
		}
		if !inPlace {
			return meta, fmt.Errorf("%w: file of kind %d out of place (after kind %d)", ErrBadImage, h.Kind, last)
		}
		if h.Kind != xferSnapshot && h.ID != 0 {
			return meta, fmt.Errorf("%w: file of kind %d with id %d", ErrBadImage, h.Kind, h.ID)
		}
		seen[h.Kind], last = true, h.Kind
		rowBytes := int64(meta.Dim) * 4 * int64(meta.NRows)
		switch h.Kind {
		case xferMeta:
			b, err := io.ReadAll(io.LimitReader(ir, xferMetaSize+1))
			if err != nil {
				return meta, err
			}
			if meta, err = decodeXferMeta(b); err != nil {
				return meta, err
			}
			if meta.Dim == 0 || meta.Dim > MaxDim {
				return meta, fmt.Errorf("%w: dimension %d", ErrBadImage, meta.Dim)
			}
		case xferState:
			if _, err := write(filepath.Join(dir, importStateName), nil); err != nil {
				return meta, err
			}
		case xferVectors:
			n, err := write(filepath.Join(dir, genName(vecBase, vecExt, 0)), nil)
			if err == nil {
				err = want("vector file", n, rowBytes)
			}
			if err != nil {
				return meta, err
			}
		case xferSums:
			hdr := encodeSumsHeader(sumsHeader{Dim: meta.Dim, LegacyPayloadEnd: meta.LegacyPayloadEnd})
			n, err := write(filepath.Join(dir, genName(vecBase, sumsExt, 0)), hdr)
			if err == nil {
				err = want("checksum file", n, 8*int64(meta.NRows))
			}
			if err != nil {
				return meta, err
			}
		case xferPayloads:
			n, err := write(filepath.Join(dir, genName(payBase, payExt, 0)), nil)
			if err == nil {
				err = want("payload file", n, int64(meta.PaySize))
			}
			if err != nil {
				return meta, err
			}
		case xferSnapshot:
			if h.ID == 0 || snaps[h.ID] {
				return meta, fmt.Errorf("%w: snapshot file %d twice or unnumbered", ErrBadImage, h.ID)
			}
			snaps[h.ID] = true
			snapDir = filepath.Join(dir, "snapshots")
			if err := fsys.MkdirAll(snapDir, 0o755); err != nil {
				return meta, fdError(err)
			}
			if err := db.receiveSnapFile(ir, filepath.Join(snapDir, fmt.Sprintf("%016x.snap", h.ID)), meta.SrcUID, h.ID, uid); err != nil {
				return meta, err
			}
		case xferIndex:
			indexDir = filepath.Join(dir, genName(indexBase, "", 0))
			if err := fsys.MkdirAll(indexDir, 0o755); err != nil {
				return meta, fdError(err)
			}
			if _, err := write(filepath.Join(indexDir, ivfpq.FileName), nil); err != nil {
				return meta, err
			}
		default:
			return meta, fmt.Errorf("%w: unknown file kind %d (written by a newer build?)", ErrBadImage, h.Kind)
		}
	}
	if !seen[xferPayloads] {
		return meta, fmt.Errorf("%w: no payload file", ErrBadImage)
	}
	if uint32(len(snaps)) != meta.SnapFiles || seen[xferIndex] != meta.Index {
		return meta, fmt.Errorf("%w: %d snapshot files and index %v, the meta says %d and %v",
			ErrBadImage, len(snaps), seen[xferIndex], meta.SnapFiles, meta.Index)
	}
	for _, d := range []string{snapDir, indexDir, dir} {
		if d != "" {
			if err := fsys.SyncDir(d); err != nil {
				return meta, err
			}
		}
	}
	return meta, nil
}

// uidOf returns the uid a collection folder is named by.
func uidOf(dir string) uint64 {
	var uid uint64
	fmt.Sscanf(filepath.Base(dir), "%016x", &uid)
	return uid
}

// maxSnapFile bounds the snapshot file an import holds in memory (one at
// a time, as Open reads them): some 60 million memories' states.
const maxSnapFile = 4 << 30

// receiveSnapFile writes the image's current file, snapshot seq of the
// source collection srcUID, to path as a file of collection uid. A
// snapshot file names its collection, so a sound one is rewritten with
// the new uid; one that does not decode is written as it came, and will be
// listed as damaged, as at the source.
func (db *DB) receiveSnapFile(ir *image.Reader, path string, srcUID, seq, uid uint64) error {
	b, err := io.ReadAll(io.LimitReader(ir, maxSnapFile+1))
	if err != nil {
		return err
	}
	if len(b) > maxSnapFile {
		return fmt.Errorf("%w: snapshot file %d above %d bytes", ErrBadImage, seq, maxSnapFile)
	}
	if f, err := decodeSnapFile(b, srcUID, seq); err == nil {
		f.UID = uid
		b = encodeSnapFile(f)
	}
	return vfs.WriteFileAtomic(db.fs, path, b)
}

// decodeImportState decodes an image's state file and checks it against
// its meta file.
func decodeImportState(b []byte, meta xferMetaRec) (ckptCollection, error) {
	cp, err := decodeCheckpoint(b)
	if err != nil {
		return ckptCollection{}, fmt.Errorf("image state: %w", err)
	}
	if cp.kind != ckptFull || len(cp.colls) != 1 {
		return ckptCollection{}, fmt.Errorf("%w: state of kind %d with %d collections", ErrBadImage, cp.kind, len(cp.colls))
	}
	if err := cp.checkBounds(); err != nil {
		return ckptCollection{}, fmt.Errorf("image state: %w", err)
	}
	cc := cp.colls[0]
	switch {
	case cc.uid != meta.SrcUID, cc.nrows != meta.NRows, cc.paySize != meta.PaySize, cc.nextID != meta.NextID,
		uint64(len(cc.mems)) != meta.Memories, cc.cfg.Dim != int(meta.Dim):
		return cc, fmt.Errorf("%w: the state does not match the meta file", ErrBadImage)
	}
	if err := cc.cfg.Validate(); err != nil {
		return cc, fmt.Errorf("%w: %v", ErrBadImage, err)
	}
	if _, err := checkIndexed(cc.cfg.Indexed); err != nil {
		return cc, fmt.Errorf("%w: %v", ErrBadImage, err)
	}
	seen := make(map[uint64]bool, len(cc.mems))
	for _, m := range cc.mems {
		if seen[m.id] {
			return cc, fmt.Errorf("%w: memory %d twice", ErrBadImage, m.id)
		}
		seen[m.id] = true
	}
	for _, s := range cc.sections {
		if s.Tag == sectCompact {
			return cc, fmt.Errorf("%w: a compaction generation in the state", ErrBadImage)
		}
	}
	return cc, nil
}

// openImportedLocked opens the collection whose image files are in uid's
// folder and loads its state cc: the memories, marked dirty so that the
// next checkpoint (a delta as much as a full one) writes them, and the
// sections. History logs are renumbered to LSN 0: their LSNs were the
// source log's, and every record of this log comes after the import.
// REQUIRES: db.mu held for writing, or recovery.
func (db *DB) openImportedLocked(name string, uid uint64, cc ckptCollection) (*Collection, error) {
	cc.uid, cc.name = uid, name
	c, err := openCollectionGen(db, name, uid, cc.cfg, 0, cc.nrows, cc.paySize, false)
	if err != nil {
		return nil, err
	}
	// loadCheckpointLocked, but with the entries marked dirty: they are
	// in no checkpoint yet. An image holds each id once, in order.
	c.nextID = max(cc.nextID, 1)
	c.rowIDs = make([]uint64, cc.nrows)
	for _, m := range cc.mems {
		c.mems[m.id] = m.m
		c.liveIDs.add(m.id)
		c.rowIDs[m.m.row] = m.id
		c.q.Put(m.id, qEntry(m))
		for i, s := range m.sections {
			if s.Tag == memSectHistory && len(s.Data) > 1 {
				m.sections[i].Data = histWithLSN0(s.Data)
			}
		}
	}
	if err := c.loadSectionsLocked(cc); err != nil {
		c.closeFiles()
		return nil, err
	}
	return c, nil
}

// histWithLSN0 returns history section data (version byte, then a log)
// with the log's LSN set to 0; data that does not decode is returned as
// it is (checkMemSections has already checked it).
func histWithLSN0(data []byte) []byte {
	return append([]byte{data[0]}, histlog.WithLSN(data[1:], 0)...)
}

// commitImport logs the import and makes the collection visible, then
// opens its index and waits for the record to be durable.
func (db *DB) commitImport(c *Collection) error {
	db.mu.Lock()
	if db.closed || db.closing {
		db.mu.Unlock()
		return ErrClosed
	}
	if _, ok := db.colls[c.name]; ok {
		db.mu.Unlock()
		return fmt.Errorf("%w: %q", ErrCollectionExists, c.name)
	}
	if max := db.opts.MaxCollections; max > 0 && len(db.colls) >= max {
		db.mu.Unlock()
		return fmt.Errorf("%w: the database holds %d", ErrTooManyCollections, len(db.colls))
	}
	// Straight to the log, never into a transaction's group (logFor): a
	// group cut short by a crash is dropped whole at replay, and this
	// record must stand once its wait below returns.
	lsn, err := db.log.Enqueue(encodeImport(c.uid, c.name))
	if err != nil {
		db.mu.Unlock()
		return err
	}
	db.imports.logged(c.uid, uint64(lsn))
	c.mu.Lock()
	db.addCollectionLocked(c)
	db.mu.Unlock()
	c.openIndexLocked()
	c.mu.Unlock()
	if err := db.log.WaitDurable(lsn); err != nil {
		return err
	}
	if err := db.fs.Remove(filepath.Join(c.dir, importMarkerName)); err != nil {
		db.opts.Logf("memrl: import of %q: removing its marker: %v", c.name, err)
	}
	return nil
}

// replayImportLocked applies a recImport record at lsn.
// REQUIRES: recovery.
func (db *DB) replayImportLocked(lsn uint64, rec []byte) error {
	uid, name, err := decodeImport(rec)
	if err != nil {
		return err
	}
	if _, ok := db.byUID[uid]; ok {
		return nil // a checkpoint after the record holds it
	}
	dir := collectionDir(db.dir, uid)
	state, err := vfs.ReadFile(db.fs, filepath.Join(dir, importStateName))
	if err != nil {
		return fmt.Errorf("import of %q: state file: %w", name, err)
	}
	cp, err := decodeCheckpoint(state)
	if err != nil || len(cp.colls) != 1 {
		return fmt.Errorf("%w: import of %q: state file: %v", ErrCorruptCheckpoint, name, err)
	}
	c, err := db.openImportedLocked(name, uid, cp.colls[0])
	if err != nil {
		return fmt.Errorf("import of %q: %w", name, err)
	}
	db.addCollectionLocked(c)
	db.imports.logged(uid, lsn)
	return nil
}

// removeImportLeftovers runs at Open, after replay: a collection folder
// still marked as importing is removed when no collection of the database
// or of its checkpoint (ckptUIDs) is that folder's (a crash cut its
// import short), and its marker is removed when one is (a crash came
// between the record and the marker's removal).
// REQUIRES: recovery.
func (db *DB) removeImportLeftovers(ckptUIDs map[uint64]bool) error {
	root := filepath.Join(db.dir, "collections")
	names, err := db.fs.List(root)
	if err != nil {
		return err
	}
	for _, n := range names {
		dir := filepath.Join(root, n)
		if _, err := db.fs.Stat(filepath.Join(dir, importMarkerName)); err != nil {
			continue
		}
		uid := uidOf(dir)
		if _, live := db.byUID[uid]; live || ckptUIDs[uid] {
			if err := db.fs.Remove(filepath.Join(dir, importMarkerName)); err != nil {
				return err
			}
			continue
		}
		db.opts.Logf("memrl: recovery: removing the files of an import a crash cut short (folder %s)", n)
		if err := vfs.RemoveAllPaced(db.fs, dir); err != nil {
			return err
		}
	}
	return nil
}
