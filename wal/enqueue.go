package wal

// Two-phase append. Append both orders a record in the log and waits for
// it; a caller that must make the log order equal the order in which it
// applies changes in memory does the first half under its own lock and the
// second half without it:
//
//	mu.Lock()
//	lsn, err := log.Enqueue(rec)   // cheap: orders and buffers the record
//	apply(change)
//	mu.Unlock()
//	err = log.WaitDurable(lsn)     // blocks, per the sync policy
//
// INVARIANT: the durable log is always a prefix of the enqueued order, so
// if a record is durable every record enqueued before it is too.

// Enqueue adds rec to the log and returns its LSN without waiting for it
// to be written. rec is copied. Call WaitDurable(lsn) before acknowledging
// the change the record describes. Records larger than MaxRecordSize are
// refused with ErrRecordTooLarge.
func (l *Log) Enqueue(rec []byte) (LSN, error) {
	if len(rec) > MaxRecordSize {
		return 0, ErrRecordTooLarge
	}
	d := payloadDigest(rec) // outside mu: the expensive part of encoding
	l.mu.Lock()
	if err := l.usableLocked(); err != nil {
		l.mu.Unlock()
		return 0, err
	}
	lsn := l.nextLSN
	l.appendLocked(rec, d)
	if l.opts.Sync == SyncAlways {
		// Every batch holding an enqueued record is fsynced, whoever
		// waits for it.
		l.cur.sync = true
	}
	big := l.buffered >= flushThreshold
	l.mu.Unlock()
	if big {
		l.wake()
	}
	return lsn, nil
}

// WaitDurable blocks until the record at lsn (from Enqueue) is durable as
// the sync policy defines it: fsynced (SyncAlways), or written to the
// operating system's file (SyncInterval and SyncNone), so that it survives
// a crash of the process either way. It returns the log's failure if the
// record could not be made durable. WaitDurable(0) returns at once.
func (l *Log) WaitDurable(lsn LSN) error {
	if lsn == 0 {
		return nil
	}
	l.mu.Lock()
	b := l.batchOfLocked(lsn)
	if b == nil {
		// Its batch has completed; a failure since is sticky in l.err.
		err := l.err
		l.mu.Unlock()
		return err
	}
	l.mu.Unlock()
	l.wake()
	<-b.done
	return b.err
}

// batchOfLocked returns the batch that holds lsn and has not completed, or
// nil if that batch has completed.
// REQUIRES: l.mu held.
func (l *Log) batchOfLocked(lsn LSN) *batch {
	in := func(b *batch) bool { return b.first <= lsn && lsn < b.first+LSN(b.n) }
	if in(l.cur) {
		return l.cur
	}
	for _, b := range l.sealed {
		if in(b) {
			return b
		}
	}
	for _, b := range l.flushing {
		if in(b) {
			return b
		}
	}
	return nil
}

// NextLSN returns the LSN the next enqueued record will get: every record
// enqueued before the call has a smaller one. A checkpoint takes it as its
// replay position instead of rolling the log (Rotate), which would make
// every writer wait behind a segment switch and its fsyncs.
func (l *Log) NextLSN() LSN {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.nextLSN
}
