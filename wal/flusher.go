package wal

import (
	"path/filepath"
	"time"
)

// flushLoop is the flusher goroutine: the only writer of segment files
// once Open has returned. It takes every pending batch at once, writes
// them in order, fsyncs once if any of them asked for it, and then
// completes them all — so appenders that arrived during the previous
// fsync share the next one.
func (l *Log) flushLoop() {
	defer close(l.exited)
	var tick <-chan time.Time
	if l.opts.Sync == SyncInterval {
		t := time.NewTicker(l.opts.SyncInterval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-l.kick:
		case <-tick:
			if l.seg.dirty && l.Err() == nil {
				if err := l.syncActive(); err != nil {
					l.fail("fsync", err)
				}
			}
			continue
		}
		l.mu.Lock()
		batches := l.sealed
		l.sealed = nil
		if c := l.cur; c.n > 0 || c.sync || c.rotate || c.final {
			batches = append(batches, c)
			l.cur = l.newBatchLocked(l.nextLSN)
		}
		l.buffered = 0
		l.flushing = batches
		failed := l.err
		l.mu.Unlock()

		err := failed
		if err == nil {
			err = l.writeBatches(batches)
		}
		final := false
		for _, b := range batches {
			b.err = err
			final = final || b.final
		}
		bufs := make([][]byte, len(batches))
		for i, b := range batches {
			bufs[i] = b.buf
			b.buf = nil
			close(b.done)
		}
		l.mu.Lock()
		l.flushing = nil
		l.mu.Unlock()
		l.recycle(bufs)
		if final {
			return
		}
	}
}

// writeBatches writes batches in order, rolling segments as needed, then
// fsyncs if any batch asked for it. On failure it makes the failure
// sticky and returns it.
// REQUIRES: called by the flusher goroutine.
func (l *Log) writeBatches(batches []*batch) error {
	needSync := false
	for _, b := range batches {
		if err := l.writeBatch(b); err != nil {
			return l.fail("write", err)
		}
		if b.rotate && l.seg.records > 0 {
			if err := l.roll(b.first + LSN(b.n)); err != nil {
				return l.fail("rotate", err)
			}
		}
		needSync = needSync || b.sync
	}
	if needSync && l.seg.dirty {
		if err := l.syncActive(); err != nil {
			return l.fail("fsync", err)
		}
	}
	return nil
}

// writeBatch writes b's frames to the active segment, rolling to a new
// segment before a frame that would take the segment past SegmentSize
// (a segment always takes at least one frame, however large).
// REQUIRES: called by the flusher goroutine.
func (l *Log) writeBatch(b *batch) error {
	buf, lsn := b.buf, b.first
	for len(buf) > 0 {
		// Take the longest run of whole frames that fits.
		n, count := 0, 0
		for n < len(buf) {
			fs := frameSize(int(decodeFrameHeader(buf[n:]).n))
			if l.seg.size+int64(n+fs) > l.opts.SegmentSize && l.seg.records+count > 0 {
				break
			}
			n += fs
			count++
		}
		if n > 0 {
			if _, err := l.seg.f.WriteAt(buf[:n], l.seg.size); err != nil {
				return err
			}
			l.stats.writes.Add(1)
			l.stats.bytes.Add(uint64(n))
			l.seg.size += int64(n)
			l.stats.activeBytes.Store(l.seg.size)
			l.seg.records += count
			l.seg.dirty = true
			lsn += LSN(count)
			buf = buf[n:]
			l.mu.Lock()
			l.writtenLSN = lsn
			l.mu.Unlock()
		}
		if len(buf) > 0 {
			if err := l.roll(lsn); err != nil {
				return err
			}
		}
	}
	return nil
}

// syncActive fsyncs the active segment.
// REQUIRES: called by the flusher goroutine (or by Open before it starts).
func (l *Log) syncActive() error {
	start := time.Now()
	if err := l.seg.f.Sync(); err != nil {
		return err
	}
	l.stats.syncLatency.Record(time.Since(start))
	l.stats.syncs.Add(1)
	l.seg.dirty = false
	return nil
}

// roll finishes the active segment and starts segment num+1 whose first
// record will be base.
//
// Order matters for recovery: the old segment is fsynced before the new
// one exists, so every segment but the last is complete on disk; the new
// segment's header is written and fsynced before its name is made
// durable (SyncDir), so a crash leaves either no new segment or one with
// a complete header (or, if the name got out early, an incomplete header
// with nothing after it, which recovery removes).
// REQUIRES: called by the flusher goroutine (or by Open before it starts).
func (l *Log) roll(base LSN) error {
	finished := l.seg.size // the size of the segment being finished, if any
	if l.seg.f != nil {
		if l.seg.dirty {
			if err := l.syncActive(); err != nil {
				return err
			}
		}
		if err := l.seg.f.Close(); err != nil {
			return err
		}
		l.seg.f = nil
	}
	num := l.seg.num + 1
	path := filepath.Join(l.dir, segmentName(num))
	f, err := l.fs.Create(path)
	if err != nil {
		return err
	}
	hdr := segmentHeader{num: num, base: base}.encode()
	if _, err := f.WriteAt(hdr, 0); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		f.Close()
		return err
	}
	l.seg = activeSegment{f: f, num: num, base: base, size: segmentHeaderSize}
	l.mu.Lock()
	if n := len(l.segments); n > 0 && finished > 0 {
		l.segments[n-1].size = finished
	}
	l.segments = append(l.segments, segmentInfo{num: num, base: base, path: path})
	l.stats.activeBytes.Store(segmentHeaderSize)
	l.mu.Unlock()
	return nil
}

// fail records err as the sticky failure (unless one is recorded
// already) and returns the sticky failure.
func (l *Log) fail(op string, err error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		l.err = failure(op, err)
	}
	return l.err
}
