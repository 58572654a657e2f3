package wal

import (
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"

	"github.com/memrl/memrl/internal/histo"
	"github.com/memrl/memrl/vfs"
)

// LSN is a log sequence number: the position of a record in the log.
// Records are numbered 1, 2, 3, ... in append order with no gaps, across
// segments; 0 is never a record's LSN. LSNs are totally ordered and
// survive restarts (each segment header stores the LSN of its first
// record, each frame stores its own LSN).
type LSN uint64

// flushThreshold is how many buffered bytes make Enqueue wake the flusher
// at once, before anyone waits: a caller that enqueues many records before
// waiting for the last gets them written as they accumulate.
const flushThreshold = 1 << 20

// maxSpareBuf bounds the capacity of a recycled batch buffer.
const maxSpareBuf = 16 << 20

// Log is a write-ahead log: an ordered sequence of opaque records in
// segment files. It is safe for concurrent use.
//
// One flusher goroutine does all writes and fsyncs of segment files;
// appenders encode their records into the current batch under mu and
// wait, per the sync policy, for the batch to be written or fsynced.
// Records arriving while a batch is being written and fsynced form the
// next batch, which is what makes group commit cost one fsync per batch.
type Log struct {
	opts Options
	fs   vfs.FS
	dir  string

	// kick wakes the flusher (capacity 1: kicks coalesce).
	kick chan struct{}
	// exited is closed when the flusher returns.
	exited chan struct{}

	// removeMu serializes RemoveBefore calls.
	removeMu sync.Mutex

	mu sync.Mutex
	// Fields below are guarded by mu.

	// nextLSN is the LSN the next appended record gets.
	nextLSN LSN
	// cur is the batch being filled. INVARIANT: non-nil; cur.first ==
	// nextLSN - cur.n.
	cur *batch
	// sealed holds batches that must be written before cur, in order
	// (Rotate seals the batch it applies to).
	sealed []*batch
	// flushing holds the batches the flusher has taken and not yet
	// completed, so WaitDurable can find the batch of an LSN.
	flushing []*batch
	// buffered is the number of frame bytes in sealed and cur.
	buffered int
	// writtenLSN is the first LSN not yet written to a segment file:
	// records below it can be read back by Replay.
	writtenLSN LSN
	// segments lists the segment files, ascending. The last is the one
	// the flusher appends to. The flusher appends to it; RemoveBefore
	// removes from its front.
	segments []segmentInfo
	// spare holds buffers of completed batches for reuse, so that batch
	// buffers are not regrown (and their pages not refaulted) per batch.
	spare [][]byte
	// err is the sticky failure (wraps ErrFailed), or nil.
	err error
	// closed is set by Close.
	closed bool

	// seg is the segment being appended to. Owned by the flusher
	// goroutine after Open returns; nobody else touches it.
	seg activeSegment

	stats struct {
		records, bytes, writes, syncs atomic.Uint64
		// activeBytes mirrors seg.size for Stats (seg is the flusher's).
		activeBytes atomic.Int64
		// syncLatency times the fsyncs of segment files.
		syncLatency histo.Histogram
	}
}

// activeSegment is the segment file the flusher appends to.
type activeSegment struct {
	f       vfs.File // nil only before the first segment is created
	num     uint64
	base    LSN
	size    int64 // bytes written (header included)
	records int   // records written
	dirty   bool  // written since the last fsync
}

// batch is a group of records written (and fsynced) together.
type batch struct {
	buf    []byte // frames, contiguous LSNs from first
	first  LSN
	n      int
	sync   bool // fsync after writing
	rotate bool // start a new segment after writing (if the active one has records)
	final  bool // the flusher exits after this batch (Close)
	done   chan struct{}
	err    error // written before done is closed
}

// maxSpare bounds the number of recycled batch buffers.
const maxSpare = 4

// newBatchLocked returns an empty batch starting at first, reusing a
// spare buffer if there is one.
// REQUIRES: l.mu held.
func (l *Log) newBatchLocked(first LSN) *batch {
	b := &batch{first: first, done: make(chan struct{})}
	if n := len(l.spare); n > 0 {
		b.buf = l.spare[n-1][:0]
		l.spare = l.spare[:n-1]
	}
	return b
}

// recycle keeps the buffers of completed batches for reuse.
// REQUIRES: the batches were taken by the flusher (nobody else reads
// their buffers: appenders only touch a batch while it is l.cur).
func (l *Log) recycle(bufs [][]byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, b := range bufs {
		if cap(b) > 0 && cap(b) <= maxSpareBuf && len(l.spare) < maxSpare {
			l.spare = append(l.spare, b)
		}
	}
}

// Stats are cumulative counters of a Log since Open, and the size of
// what it holds now.
type Stats struct {
	Records   uint64 // records appended
	Bytes     uint64 // bytes of frames written to segment files
	Writes    uint64 // write calls to segment files
	Syncs     uint64 // fsyncs of segment files
	SyncNanos uint64 // time spent in those fsyncs, in nanoseconds
	Segments  int    // segment files currently held
	DiskBytes int64  // bytes of those files (headers included), as written
}

// Stats returns the log's counters. It takes the log's lock briefly (to
// read the segment list) and never waits for a write or an fsync.
func (l *Log) Stats() Stats {
	l.mu.Lock()
	n := len(l.segments)
	var disk int64
	for _, s := range l.segments[:max(n-1, 0)] {
		disk += s.size
	}
	disk += l.stats.activeBytes.Load()
	l.mu.Unlock()
	return Stats{
		Records:   l.stats.records.Load(),
		Bytes:     l.stats.bytes.Load(),
		Writes:    l.stats.writes.Load(),
		Syncs:     l.stats.syncs.Load(),
		SyncNanos: l.stats.syncLatency.Sum(),
		Segments:  n,
		DiskBytes: disk,
	}
}

// SyncLatency copies the histogram of the durations of the log's fsyncs
// of segment files into s (see package internal/histo).
func (l *Log) SyncLatency(s *histo.Snapshot) { l.stats.syncLatency.Snapshot(s) }

// Open opens the log in opts.Dir, creating it if needed, and recovers it:
// every segment is read and verified. A torn tail of the last segment
// (an incomplete write at the moment of a crash) is cut off and reported.
// Any other damage is returned as a *CorruptionError and nothing is
// changed on disk.
//
// Call Replay before appending to read the recovered records. Only one
// Log may have a directory open at a time; Open does not lock it.
func Open(opts Options) (*Log, *RecoveryReport, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, nil, err
	}
	fs, dir := opts.FS, filepath.Clean(opts.Dir)
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	// Make the directory's own entry durable in case MkdirAll made it.
	if err := fs.SyncDir(filepath.Dir(dir)); err != nil {
		return nil, nil, err
	}
	rec, err := scanLog(fs, dir)
	if err != nil {
		return nil, nil, err
	}
	gap, err := checkGap(fs, dir, rec, opts) // gap.go
	if err != nil {
		return nil, nil, err
	}
	if gap != nil && gap.Next < gap.From {
		rec = &recovery{next: gap.From, lastNum: rec.lastNum}
	}

	l := &Log{
		opts:       opts,
		fs:         fs,
		dir:        dir,
		kick:       make(chan struct{}, 1),
		exited:     make(chan struct{}),
		nextLSN:    rec.next,
		writtenLSN: rec.next,
		segments:   rec.segments,
	}
	l.cur = l.newBatchLocked(rec.next)
	// The next segment created gets l.seg.num+1: after the last segment
	// found, reusing the number of one removed as torn.
	l.seg.num = rec.lastNum
	if rec.torn != nil && rec.torn.Removed {
		l.seg.num--
	}

	if err := l.repairAndActivate(rec); err != nil {
		return nil, nil, err
	}

	report := &RecoveryReport{
		Segments: len(l.segments),
		FirstLSN: l.segments[0].base,
		NextLSN:  rec.next,
		Torn:     rec.torn,
		Gap:      gap,
	}
	go l.flushLoop()
	return l, report, nil
}

// repairAndActivate cuts off a torn tail found by scanLog and makes the
// last segment (or a new one) the active segment.
// REQUIRES: called by Open before the flusher starts.
func (l *Log) repairAndActivate(rec *recovery) error {
	if t := rec.torn; t != nil && t.Removed {
		if err := l.fs.Remove(t.File); err != nil {
			return err
		}
		if err := l.fs.SyncDir(l.dir); err != nil {
			return err
		}
	}
	if n := len(rec.segments); n > 0 {
		last := rec.segments[n-1]
		tornHere := rec.torn != nil && !rec.torn.Removed
		if rec.lastEnd < l.opts.SegmentSize || tornHere {
			f, err := l.fs.OpenReadWrite(last.path)
			if err != nil {
				return err
			}
			if tornHere {
				// Cut the tail and make the cut durable before anything
				// is appended after it, or a crash could resurrect it.
				if err := f.Truncate(rec.lastEnd); err != nil {
					f.Close()
					return err
				}
				if err := f.Sync(); err != nil {
					f.Close()
					return err
				}
			}
			if rec.lastEnd < l.opts.SegmentSize {
				l.seg = activeSegment{f: f, num: last.num, base: last.base,
					size: rec.lastEnd, records: int(rec.next - last.base)}
				l.stats.activeBytes.Store(rec.lastEnd)
				return nil
			}
			if err := f.Close(); err != nil {
				return err
			}
		}
	}
	return l.roll(rec.next)
}

// Append adds rec to the log and returns its LSN once it is durable per
// the sync policy (see SyncPolicy). rec is copied; the caller may reuse
// it. An empty record is allowed. Records larger than MaxRecordSize are
// refused with ErrRecordTooLarge.
func (l *Log) Append(rec []byte) (LSN, error) {
	lsn, err := l.Enqueue(rec)
	if err != nil {
		return 0, err
	}
	return lsn, l.WaitDurable(lsn)
}

// AppendBatch appends recs as one group, with consecutive LSNs, and
// returns the LSN of the first (the last is first+len(recs)-1). The
// records share one write and one fsync. They are NOT atomic across a
// crash: a torn tail may keep a prefix of them. If any record is too
// large, nothing is appended.
func (l *Log) AppendBatch(recs [][]byte) (LSN, error) {
	digests := make([]xxhash.Digest, len(recs))
	for i, r := range recs {
		if len(r) > MaxRecordSize {
			return 0, ErrRecordTooLarge
		}
		digests[i] = payloadDigest(r)
	}
	l.mu.Lock()
	if err := l.usableLocked(); err != nil {
		l.mu.Unlock()
		return 0, err
	}
	lsn := l.nextLSN
	for i, r := range recs {
		l.appendLocked(r, digests[i])
	}
	if l.opts.Sync == SyncAlways {
		l.cur.sync = true
	}
	last := l.nextLSN - 1
	l.mu.Unlock()
	if len(recs) == 0 {
		return lsn, nil
	}
	return lsn, l.WaitDurable(last)
}

// usableLocked returns why the log cannot take records, or nil.
// REQUIRES: l.mu held.
func (l *Log) usableLocked() error {
	if l.err != nil {
		return l.err
	}
	if l.closed {
		return ErrClosed
	}
	return nil
}

// appendLocked encodes rec into the current batch.
// REQUIRES: l.mu held; l.usableLocked() == nil.
func (l *Log) appendLocked(rec []byte, d xxhash.Digest) {
	before := len(l.cur.buf)
	l.cur.buf = appendFrame(l.cur.buf, l.nextLSN, rec, d)
	l.cur.n++
	l.nextLSN++
	l.buffered += len(l.cur.buf) - before
	l.stats.records.Add(1)
}

// wake kicks the flusher without blocking.
func (l *Log) wake() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// Sync writes and fsyncs every record appended before the call.
func (l *Log) Sync() error {
	l.mu.Lock()
	if err := l.usableLocked(); err != nil {
		l.mu.Unlock()
		return err
	}
	b := l.cur
	b.sync = true
	l.mu.Unlock()
	l.wake()
	<-b.done
	return b.err
}

// Rotate makes every record appended before the call durable, closes the
// current segment and starts a new one. It returns the LSN of the first
// record the new segment will hold: every record appended before Rotate
// has a smaller LSN, every record appended after has this LSN or a
// larger one. If the current segment holds no records it is kept and its
// first LSN returned.
//
// The engine does not rotate at a checkpoint (a roll fsyncs and creates a
// file while writers wait); it takes NextLSN instead. Rotate is for
// callers that want a segment boundary at a known LSN.
func (l *Log) Rotate() (LSN, error) {
	l.mu.Lock()
	if err := l.usableLocked(); err != nil {
		l.mu.Unlock()
		return 0, err
	}
	b := l.cur
	b.rotate = true
	b.sync = true
	lsn := l.nextLSN
	l.sealed = append(l.sealed, b)
	l.cur = l.newBatchLocked(l.nextLSN)
	l.mu.Unlock()
	l.wake()
	<-b.done
	if b.err != nil {
		return 0, b.err
	}
	return lsn, nil
}

// Err returns the log's sticky failure (wrapping ErrFailed), or nil.
func (l *Log) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Close writes and fsyncs everything appended, stops the flusher and
// closes the active segment. It returns the sticky failure if the log
// failed, and ErrClosed if already closed.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	l.closed = true
	b := l.cur
	b.sync = true
	b.final = true
	l.mu.Unlock()
	l.wake()
	<-b.done
	<-l.exited
	var cerr error
	if l.seg.f != nil { // the flusher has exited: seg is ours now
		cerr = l.seg.f.Close()
		l.seg.f = nil
	}
	if b.err != nil {
		return b.err
	}
	return cerr
}
