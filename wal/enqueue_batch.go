package wal

import "github.com/cespare/xxhash/v2"

// EnqueueBatch is Enqueue for several records at once: it adds recs to the
// log with consecutive LSNs and returns the LSN of the last, without
// waiting. The records are appended under one hold of the log's lock, so
// they land in one batch: the flusher writes them together and, with
// SyncAlways, one fsync covers them all (unless a segment rolls in their
// middle, which fsyncs the finished segment too). Like AppendBatch, they
// are NOT atomic across a crash: a torn tail may keep a prefix of them, so
// a caller acknowledges none of them before WaitDurable of the returned
// LSN.
//
// If any record is larger than MaxRecordSize (ErrRecordTooLarge), or the
// log has failed or is closed, nothing is appended. An empty recs appends
// nothing and returns 0, which WaitDurable treats as durable.
func (l *Log) EnqueueBatch(recs [][]byte) (LSN, error) {
	if len(recs) == 0 {
		return 0, nil
	}
	digests := make([]xxhash.Digest, len(recs))
	for i, r := range recs {
		if len(r) > MaxRecordSize {
			return 0, ErrRecordTooLarge
		}
		digests[i] = payloadDigest(r) // outside mu: the expensive part of encoding
	}
	l.mu.Lock()
	if err := l.usableLocked(); err != nil {
		l.mu.Unlock()
		return 0, err
	}
	for i, r := range recs {
		l.appendLocked(r, digests[i])
	}
	if l.opts.Sync == SyncAlways {
		l.cur.sync = true
	}
	last := l.nextLSN - 1
	big := l.buffered >= flushThreshold
	l.mu.Unlock()
	if big {
		l.wake()
	}
	return last, nil
}
