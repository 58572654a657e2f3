// Package histlog is the format of a memory's history log: its recent
// updates of utility (time, reward, Q after, visits), as the engine keeps
// them in memory and as a checkpoint's history section carries them.
// The engine (history.go) owns when entries are appended and where logs
// live; this package owns the bytes.
//
// # Layout
//
// A log, the same bytes in memory and in a checkpoint:
//
//	header:  lsn uvarint | n uvarint (1..MaxLen) | ms zigzag varint | visits uvarint
//	entries: n × (dms zigzag varint | dvisits zigzag varint | reward | q f64)
//	reward:  kind u8: 0..250 the integer kind-125; 0xFE f32 follows; 0xFF f64 follows
//
// Fixed-size numbers are little-endian. Entries are oldest first. The
// header holds the LSN of the log record of the newest entry, and that
// entry's time (unix milliseconds) and visits; each entry holds the
// differences of its time and visits from the entry before it (the
// oldest's are unused: dropping it needs no rewrite of its successor), so
// absolute values are recovered from the newest backwards. Integer rewards
// (the common 0, 1, -1) take one byte; -0 takes the f32 form, so that it
// is kept exactly. A full log of 32 integer rewards takes about 12 bytes
// an entry.
//
// # Checkpoint section
//
// In a checkpoint, a memory's history is its memory section of tag
// MemSectHistory (package engine/ckptfile):
//
//	version u8 = SectionVersion (1) | log
//
// The checkpoint's checksum covers the section; the log has no checksum
// of its own.
//
// # What a reader refuses
//
// Decode reads a log strictly, and CheckSection a section: a version
// other than SectionVersion, a count of entries of 0 or above MaxLen, a
// bad varint, a bad reward kind, a log cut short or with bytes past its
// last entry, a visit count that wraps below zero, a reward or Q that is
// NaN or infinite (no reward can produce one). The engine refuses a
// checkpoint holding such a section as damaged. Decoding allocates at most
// MaxLen entries, whatever the count declares.
package histlog
