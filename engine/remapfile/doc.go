// Package remapfile is the format of a compaction's row map,
// collections/<uid>/remap.<gen>.map: how the rows and payload offsets of
// a collection's generation gen-1 become those of generation gen.
//
// A compaction (the engine's compact.go; engine/doc.go, "Compaction")
// writes generation gen's files beside the current ones, holding only the
// live rows (and those snapshots pin), renumbered. Before it logs the
// remap marker (package record, TypeRemap) it writes this file durably
// (temporary file, fsync, rename, folder fsync) and puts the file's
// xxhash64 in the marker. A recovery that meets the marker after its
// checkpoint switches the collection to generation gen with this map:
// records before the marker refer to the old rows, after it to the new.
// The file is removed once a checkpoint names generation gen.
//
// # Layout
//
//	+------------+---------+-----+-------+---------+--------------+----------------+-------+
//	| "MRLREMAP" | version | gen | nkept | npinned | kept entries | pinned entries | xxh64 |
//	| 8 bytes    | u8 = 1  | u64 | u32   | u32     | nkept × 28   | npinned × 20   | u64   |
//	+------------+---------+-----+-------+---------+--------------+----------------+-------+
//
//	kept entry:   id u64 | oldRow u32 | oldOff u64 | newOff u64
//	pinned entry: id u64 | row u32 | off u64
//
// All integers are little-endian. The kept entry i is new row i: it
// holds memory id if that memory is, at the marker, at oldRow with its
// payload at oldOff (then it moves to row i and newOff), and the row is
// dead otherwise. A pinned entry moves a snapshot's ghost (a memory
// deleted since the snapshot, whose row the snapshot still needs) to row
// and off. The trailing xxh64 covers every byte before it.
//
// # Checksums
//
// Two: the trailer, over the file's body, and the marker's mapSum, the
// xxhash64 of the whole file (trailer included), which ties the file to
// the marker that names it: a map left by another attempt at the same
// generation is refused.
//
// # Versions
//
// Version 1 is the only one.
//
// # What a reader refuses
//
// Decode refuses, with an error wrapping ErrDamaged: a file shorter than
// its header and trailer or without the magic, one whose xxhash64 is not
// the marker's, one whose trailer does not match its body, another
// version, another generation than the marker's, and a length that does
// not match its counts. A damaged map whose marker is in the log stops
// the engine's Open (engine.ErrCorrupt), which changes nothing on disk:
// with the map repaired, the next Open recovers.
package remapfile
