// Package wal is memrl's write-ahead log.
//
// Every file operation of the log goes through a vfs.FS (package vfs), so
// the log runs on the operating system and, in crash tests, on vfs.MemFS,
// which can drop unsynced writes, tear the last sector and cut the power
// at any file operation. Old segments are removed with
// vfs.RemoveFilesPaced, so their space is freed without holding up the
// log's own fsyncs.
//
// # Records and LSNs
//
// The log is an ordered sequence of opaque records (byte strings of 0 to
// MaxRecordSize bytes). Each gets an LSN: records are numbered 1, 2, 3,
// ... in append order, without gaps, across segment files and restarts.
//
// # Files
//
// The log lives in one directory as segment files named by their segment
// number in 16 lower-case hex digits, e.g. "0000000000000001.wal";
// numbers are consecutive. Other files in the directory are ignored.
// Segment files are only ever appended to (and, at recovery, truncated
// to cut a torn tail); they are never reused. All integers are
// little-endian.
//
// Segment header (40 bytes, at offset 0):
//
//	 0               8       12      16              24              32              40
//	+---------------+-------+-------+---------------+---------------+---------------+
//	| magic         |version| flags | segment number| base LSN      | checksum      |
//	| "MEMRLWAL"    |  u32  |  u32  |      u64      |      u64      |      u64      |
//	+---------------+-------+-------+---------------+---------------+---------------+
//
//	version  = 1 (the only version read or written)
//	flags    = 0 (reserved; other values are refused)
//	segment number = the number in the file name
//	base LSN = LSN of the first record in the segment (of the next record
//	           to be appended, while the segment is empty)
//	checksum = xxhash64(bytes [0, 32))
//
// The header is followed by record frames, back to back. Each frame
// starts at an offset that is a multiple of 8:
//
//	 0               8       12      16              24                      24+len   size
//	+---------------+-------+-------+---------------+-----------------------+------+
//	| checksum      |  len  | flags |     LSN       | payload (len bytes)   | pad  |
//	|      u64      |  u32  |  u32  |      u64      |                       | 0..7 |
//	+---------------+-------+-------+---------------+-----------------------+------+
//
//	size     = roundup(24 + len, 8); pad bytes are zero
//	len      <= MaxRecordSize (64 MiB)
//	flags    = 0 (reserved)
//	LSN      = the record's LSN; the first frame of a segment carries the
//	           header's base LSN, and each next frame LSN+1
//	checksum = xxhash64(payload || bytes [8, 24) of the frame)
//
// The checksum covers the length, flags and LSN as well as the payload,
// so a damaged length or a misplaced frame is detected. The payload is
// hashed first so that Append can hash it before taking the log's lock;
// only the 16 header bytes are hashed under it.
//
// # Why 8-byte alignment, and why no preallocation
//
// Frames are 8-aligned so that recovery, when it meets a bad frame, can
// look for a valid frame after it by testing only aligned offsets (one
// in 8 instead of every byte), and so that every header field is
// naturally aligned. The cost is at most 7 bytes per record.
//
// etcd preallocates segment files and relies on the unwritten tail
// being zeros. This package does not preallocate: a file only grows by
// appends, so a crash leaves at most an incomplete last write (whatever
// bytes of it reached the disk, possibly garbage in the last sector),
// never a stale region; zeros are handled but not relied on. The price
// is that each fsync also updates the file size; the vfs.FS seam has no
// fdatasync/fallocate to avoid it.
//
// # Torn tail versus corruption
//
// A crash during a write leaves a torn tail: the end of the LAST segment
// holds a partial or garbled frame, possibly followed by more of the
// same. Open cuts it off (truncating the file and fsyncing), and reports
// it in RecoveryReport.Torn. Such records were never acknowledged under
// SyncAlways, because Append returns only after the fsync that covers
// them.
//
// Everything else is corruption, and Open returns a *CorruptionError
// naming the file and offset, and changes nothing:
//   - a bad frame (checksum mismatch, implausible header, or extending
//     past the end of the file) followed, at some later aligned offset,
//     by a frame that verifies and carries an LSN at or after the one
//     expected: data was damaged in the middle of the log;
//   - a frame that verifies but carries the wrong LSN;
//   - any bad frame in a segment other than the last: segments are
//     fsynced completely before the next one is created, so only the
//     last can have a torn tail;
//   - a segment header that does not verify, unless it is the last
//     segment and the file holds nothing beyond the header (a crash while
//     the segment was being created; Open removes that file);
//   - missing segment numbers, or a segment whose base LSN does not
//     follow the previous segment's last record.
//
// # Durability and group commit
//
// A single flusher goroutine does all segment writes and fsyncs.
// Appenders encode their frames into the current batch under the log's
// mutex; the flusher takes all pending batches at once, writes them
// (one write call per segment touched) and, if any appender needs it,
// fsyncs once. Appends arriving meanwhile form the next batch, so N
// concurrent SyncAlways appenders share about one fsync per batch. See
// SyncPolicy for what Append waits for under each policy. Under every
// policy Append returns only after its record's write call: SyncAlways
// survives a process kill and a machine crash; SyncInterval and SyncNone
// survive a process kill (the kernel holds the written pages) and lose,
// on a machine crash, what was not fsynced yet (the last SyncInterval, or
// whatever the kernel had not written back).
//
// The flusher times every fsync of a segment file (Log.SyncLatency, a
// lock-free histogram) and Log.Stats reports the records, bytes, writes
// and fsyncs since Open and the segment files held and their bytes; both
// are for monitoring and never wait for the flusher.
//
// A failed write or fsync is fatal: the log records it as a sticky error
// wrapping ErrFailed, every waiting and later Append returns it, and the
// log never retries (after a failed fsync the kernel may have dropped
// the dirty pages, so a retry that succeeds proves nothing). Reopen the
// log to recover what is durable.
//
// # Checkpoints and compaction
//
// At a checkpoint the engine takes NextLSN (every record enqueued so far
// is below it), stores it in its checkpoint (written with a vfs.AtomicFile),
// calls RemoveBefore(lsn) to delete segments wholly below it, and after a
// restart calls Replay(lsn, ...), which may start in the middle of a
// segment. (Rotate also exists, to start a new segment on demand.)
package wal
