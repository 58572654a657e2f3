package engine

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sync"

	"github.com/memrl/memrl/engine/histlog"
	"github.com/memrl/memrl/engine/image"
	"github.com/memrl/memrl/ivfpq"
	"github.com/memrl/memrl/qtable"
	"github.com/memrl/memrl/vfs"
)

// Export and import of a whole collection (collection_import.go has the
// import). An export is a consistent cut of a collection, streamed as an
// image (package engine/image frames it) that another database imports
// as a new collection with the same state: every memory (id, vector row,
// payload, attributes, key, expiry, Q, visits, reward statistics, created
// and updated times, history), the next id, the snapshots (catalog,
// files, ghosts), the prune policy, the indexed fields, the configuration,
// and the IVF-PQ index when one is saved.
//
// The image's files, their order and the meta file's layout are package
// image's (doc.go, "The files of a collection image"): meta, state (a
// full checkpoint holding this one collection, never the compaction
// generation: the image's files are generation 0), vectors (rows
// [0, nrows) as stored, dead rows included, so that rows need no
// renumbering), sums (the source's row checksums, not recomputed, so
// damage in a source row stays detectable), payloads, one file per
// snapshot (id: its seq) and the saved IVF-PQ index, if any.
//
// Files are shipped as stored, not re-encoded, because every row, payload
// offset and ghost then keeps its meaning: the importer writes them as the
// new collection's generation-0 files. The index is shipped rather than
// rebuilt: a training at a million rows takes minutes on a small machine,
// during which retrievals would scan exactly; the importer opens it as a
// restart does (catching up the rows added after its last save) and
// rebuilds only if it is unusable.
const (
	xferMeta     = image.KindMeta
	xferState    = image.KindState
	xferVectors  = image.KindVectors
	xferSums     = image.KindSums
	xferPayloads = image.KindPayloads
	xferSnapshot = image.KindSnapshot
	xferIndex    = image.KindIndex

	xferMetaSize = image.MetaSize
)

// xferChunk is how many bytes an export reads from a file at a time.
const xferChunk = 1 << 20

// ErrExportClosed: WriteTo after Close.
var ErrExportClosed = errors.New("engine: export closed")

// Export is a consistent cut of a collection (BeginExport), streamed by
// WriteTo. It holds the in-memory state copied at the cut and descriptors
// of the files as they were then, so writes, compactions, snapshot
// deletions and index saves after the cut do not change what it streams.
// Close releases them. Safe for concurrent use, but WriteTo streams one
// image at a time.
type Export struct {
	fs  vfs.FS
	c   *Collection
	gen uint64 // the generation of the files read, pinned until Close

	mu     sync.Mutex // guards closed and serialises WriteTo
	closed bool

	meta     xferMetaRec
	name     string
	cfg      Config
	cut      exportCut    // the memories as copied under the lock
	mems     []ckptMemory // cut joined by id, made by the first WriteTo
	sections []ckptSection
	sums     []uint64 // rows' checksums; read-only (the store only appends)

	vecF, payF vfs.File
	snaps      []exportSnap
	index      vfs.File // nil when no index is saved
}

type exportSnap struct {
	seq uint64
	f   vfs.File
}

// xferMetaRec is the image's meta file (image.Meta).
type xferMetaRec = image.Meta

func encodeXferMeta(m xferMetaRec) []byte { return image.EncodeMeta(m) }

func decodeXferMeta(b []byte) (xferMetaRec, error) {
	m, err := image.DecodeMeta(b)
	if err != nil {
		return m, fmt.Errorf("%w: %v", ErrBadImage, err)
	}
	return m, nil
}

// BeginExport takes a consistent cut of the collection: the state of every
// memory as of this call. It holds the collection's write lock (so no
// reward, which holds the read lock, is half applied) only to copy the
// in-memory state (the memories' records, Q and counters, history, the
// sections: about as much as a checkpoint copies) and to open the files,
// which only grow below the sizes noted; no file is read under it. Snapshot
// commands of the collection wait for the copy too (its snapshot lock), so
// that the catalog and the snapshot files opened agree.
//
// The caller must Close the export. Files are read by WriteTo through the
// descriptors opened here, so a snapshot deletion or an index save after
// the cut (which unlink or replace files) does not disturb it; a
// compaction's removal of the generation read (which shrinks the files
// before unlinking them, vfs.ReleasePaced, so a descriptor would see it)
// is deferred to Close. A Drop of the collection is not: WriteTo then
// fails (the image would be cut short, and an importer refuses it).
func (c *Collection) BeginExport() (*Export, error) {
	c.snapMu.Lock()
	defer c.snapMu.Unlock()
	if err := c.lockLive(); err != nil {
		return nil, err
	}
	defer c.mu.Unlock()
	e := &Export{fs: c.db.fs, c: c, gen: c.gen, name: c.name, cfg: c.ckptConfigLocked()}
	nrows := c.vecs.nrows
	e.meta = xferMetaRec{SrcUID: c.uid, Dim: uint32(c.cfg.Dim), NRows: nrows, PaySize: c.pays.size,
		LegacyPayloadEnd: c.pays.legacyEnd, NextID: c.nextID}
	e.sums = c.vecs.sums[:nrows:nrows]
	e.cut = c.copyCutLocked()
	e.meta.Memories = uint64(len(e.cut.mems))
	for _, s := range c.ckptSectionsLocked() {
		if s.Tag != sectCompact { // the image's files are generation 0
			e.sections = append(e.sections, s)
		}
	}
	ok := false
	defer func() {
		if !ok {
			e.closeFiles()
		}
	}()
	var err error
	if e.vecF, err = c.db.fs.Open(c.vecs.path); err != nil {
		return nil, fdError(err)
	}
	if e.payF, err = c.db.fs.Open(c.pays.path); err != nil {
		return nil, fdError(err)
	}
	for _, s := range c.snap.list {
		f, err := c.db.fs.Open(c.snapshotPath(s.seq))
		if err != nil {
			// Recovery drops an entry without a file; the import will too.
			c.db.opts.Logf("memrl: export of %q: snapshot %q: %v", c.name, s.name, err)
			continue
		}
		e.snaps = append(e.snaps, exportSnap{seq: s.seq, f: f})
	}
	e.meta.SnapFiles = uint32(len(e.snaps))
	if c.ivf != nil {
		// The saved file, not the index in memory: it may be older than
		// the cut (the importer catches up the rows after it, as a
		// restart does), never newer, as saves replace it atomically.
		if f, err := c.db.fs.Open(filepath.Join(c.indexDir(), ivfpq.FileName)); err == nil {
			e.index = f
			e.meta.Index = true
		}
	}
	// A compaction swapping in the next generation removes this one's
	// files (paced: shrinking them first, which an open descriptor
	// would see); the pin defers that to Close.
	c.xport.pin(e.gen)
	ok = true
	return e, nil
}

// exportCut is the in-memory state of a collection's memories as
// BeginExport copies it: three sequential copies (the memory records, the
// qtable's entries, the history logs), each far cheaper than looking up
// every memory's parts one by one (snapshotRowsLocked, about 1.6 µs a
// memory on a loaded machine: 160 ms of write lock at 100k memories);
// join assembles them by id afterwards, without the lock.
type exportCut struct {
	mems []cutMem
	q    []qtable.IDEntry
	hist []cutHist
	logs []byte // the history logs, one after another
}

type cutMem struct {
	id uint64
	m  memory
}

type cutHist struct {
	id       uint64
	off, end int // the log is logs[off:end]
}

// copyCutLocked copies the memories' state. Under c.mu held for writing
// no reward runs (rewards hold it for reading), so the qtable and the
// histories agree with the memories.
// REQUIRES: c.mu held for writing.
func (c *Collection) copyCutLocked() exportCut {
	cut := exportCut{mems: make([]cutMem, 0, len(c.mems)), q: make([]qtable.IDEntry, 0, len(c.mems))}
	for id, m := range c.mems {
		cut.mems = append(cut.mems, cutMem{id, m})
	}
	c.q.Range(func(id uint64, e qtable.Entry) bool {
		cut.q = append(cut.q, qtable.IDEntry{ID: id, Entry: e})
		return true
	})
	for i := range c.hist.stripes {
		s := &c.hist.stripes[i]
		s.mu.Lock()
		for id, b := range s.logs {
			if len(b) > 0 {
				off := len(cut.logs)
				cut.logs = append(cut.logs, b...)
				cut.hist = append(cut.hist, cutHist{id, off, len(cut.logs)})
			}
		}
		s.mu.Unlock()
	}
	return cut
}

// join returns the cut's memories in id order, each with its Q entry and
// history section.
func (cut exportCut) join() []ckptMemory {
	byID := func(a, b uint64) int { return cmp.Compare(a, b) }
	slices.SortFunc(cut.mems, func(a, b cutMem) int { return byID(a.id, b.id) })
	slices.SortFunc(cut.q, func(a, b qtable.IDEntry) int { return byID(a.ID, b.ID) })
	slices.SortFunc(cut.hist, func(a, b cutHist) int { return byID(a.id, b.id) })
	out := make([]ckptMemory, len(cut.mems))
	qi, hi := 0, 0
	for i, x := range cut.mems {
		for qi < len(cut.q) && cut.q[qi].ID < x.id {
			qi++
		}
		for hi < len(cut.hist) && cut.hist[hi].id < x.id {
			hi++
		}
		cm := ckptMemory{id: x.id, m: x.m}
		if qi < len(cut.q) && cut.q[qi].ID == x.id {
			e := cut.q[qi].Entry
			cm.q, cm.visits, cm.lastReward, cm.rewardSum, cm.updated = e.Q, e.Visits, e.LastReward, e.RewardSum, e.Updated
		}
		if hi < len(cut.hist) && cut.hist[hi].id == x.id {
			h := cut.hist[hi]
			data := make([]byte, 1+h.end-h.off)
			data[0] = histlog.SectionVersion
			copy(data[1:], cut.logs[h.off:h.end])
			cm.sections = []ckptSection{{Tag: memSectHistory, Data: data}}
		}
		out[i] = cm
	}
	return out
}

// exportPins defers the removal of a generation's files (removeGen) while
// exports read them. Its own mutex: removeGen runs without c.mu.
type exportPins struct {
	mu       sync.Mutex
	pins     map[uint64]int  // generation -> open exports reading it
	deferred map[uint64]bool // generations whose removal waits for the last unpin
}

func (p *exportPins) pin(gen uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pins == nil {
		p.pins, p.deferred = make(map[uint64]int), make(map[uint64]bool)
	}
	p.pins[gen]++
}

// unpin releases a pin of gen and reports whether gen's removal was
// deferred and is now due.
func (p *exportPins) unpin(gen uint64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pins[gen]--; p.pins[gen] > 0 {
		return false
	}
	delete(p.pins, gen)
	due := p.deferred[gen]
	delete(p.deferred, gen)
	return due
}

// deferRemoval reports whether gen is pinned, noting its removal for the
// last unpin if so.
func (p *exportPins) deferRemoval(gen uint64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pins[gen] == 0 {
		return false
	}
	p.deferred[gen] = true
	return true
}

// Close releases the cut: its copy of the state and its descriptors.
func (e *Export) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	e.mems, e.cut, e.sections, e.sums = nil, exportCut{}, nil, nil
	err := e.closeFiles()
	if e.c.xport.unpin(e.gen) {
		// A compaction replaced the generation while the export read it.
		if rerr := e.c.removeGen(e.gen); rerr != nil {
			e.c.db.opts.Logf("memrl: collection %q: removing the files compaction replaced: %v", e.c.name, rerr)
		}
	}
	return err
}

func (e *Export) closeFiles() error {
	var err error
	keep := func(cerr error) {
		if err == nil {
			err = cerr
		}
	}
	for _, f := range []vfs.File{e.vecF, e.payF, e.index} {
		if f != nil {
			keep(f.Close())
		}
	}
	for _, s := range e.snaps {
		keep(s.f.Close())
	}
	e.vecF, e.payF, e.index, e.snaps = nil, nil, nil, nil
	return err
}

// Memories returns how many memories the cut holds.
func (e *Export) Memories() int { return int(e.meta.Memories) }

// WriteTo streams the image of the cut onto w and returns the bytes
// written. It reads the collection's files (as of the cut) without any
// lock of the collection, so writes to it go on meanwhile. It may be
// called again to stream the same image once more.
func (e *Export) WriteTo(w io.Writer) (int64, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return 0, ErrExportClosed
	}
	if e.mems == nil {
		e.mems = e.cut.join()
		e.cut = exportCut{}
	}
	iw := image.NewWriter(w)
	err := e.writeImage(iw)
	if err == nil {
		err = iw.Finish()
	}
	return iw.Written(), err
}

func (e *Export) writeImage(iw *image.Writer) error {
	file := func(kind uint8, id uint64, body func() error) error {
		if err := iw.Begin(kind, id); err != nil {
			return err
		}
		if err := body(); err != nil {
			return err
		}
		return iw.Close()
	}
	m := e.meta
	if err := file(xferMeta, 0, func() error { _, err := iw.Write(encodeXferMeta(m)); return err }); err != nil {
		return err
	}
	if err := file(xferState, 0, func() error { return e.writeState(iw) }); err != nil {
		return err
	}
	rowSize := int64(m.Dim) * 4
	if err := file(xferVectors, 0, func() error { return copyRange(iw, e.vecF, int64(m.NRows)*rowSize, "vector file") }); err != nil {
		return err
	}
	if err := file(xferSums, 0, func() error { return e.writeSums(iw) }); err != nil {
		return err
	}
	if err := file(xferPayloads, 0, func() error { return copyRange(iw, e.payF, int64(m.PaySize), "payload file") }); err != nil {
		return err
	}
	for _, s := range e.snaps {
		st, err := s.f.Stat()
		if err != nil {
			return err
		}
		if err := file(xferSnapshot, s.seq, func() error { return copyRange(iw, s.f, st.Size(), "snapshot file") }); err != nil {
			return err
		}
	}
	if e.index != nil {
		st, err := e.index.Stat()
		if err != nil {
			return err
		}
		if err := file(xferIndex, 0, func() error { return copyRange(iw, e.index, st.Size(), "index file") }); err != nil {
			return err
		}
	}
	return nil
}

// writeState writes the cut's state as a one-collection full checkpoint.
func (e *Export) writeState(w io.Writer) error {
	cw := newCkptWriter(w)
	cw.header(ckptFull, 1, 0, 0, e.meta.SrcUID+1, 1)
	cw.beginCollection(e.meta.SrcUID, e.name, e.cfg)
	cw.tombstones(nil)
	for mems := e.mems; len(mems) > 0; {
		k := min(len(mems), 4096)
		cw.memories(mems[:k])
		mems = mems[k:]
	}
	cw.endCollection(e.meta.NRows, e.meta.PaySize, e.meta.NextID, e.sections)
	return cw.finish()
}

func (e *Export) writeSums(w io.Writer) error {
	buf := make([]byte, 0, xferChunk)
	for _, s := range e.sums {
		buf = le.AppendUint64(buf, s)
		if len(buf) == cap(buf) {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	_, err := w.Write(buf)
	return err
}

// copyRange copies bytes [0, n) of f onto w, a chunk at a time.
func copyRange(w io.Writer, f vfs.File, n int64, what string) error {
	buf := make([]byte, min(n, xferChunk))
	for off := int64(0); off < n; {
		k := min(n-off, int64(len(buf)))
		got, err := f.ReadAt(buf[:k], off)
		if int64(got) < k {
			if err == nil || errors.Is(err, io.EOF) {
				err = fmt.Errorf("engine: export: %s ends at byte %d, the cut needs %d", what, off+int64(got), n)
			}
			return err
		}
		if _, err := w.Write(buf[:k]); err != nil {
			return err
		}
		off += k
	}
	return nil
}
