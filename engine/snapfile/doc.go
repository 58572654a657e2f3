// Package snapfile is the format of a snapshot file,
// collections/<uid>/snapshots/<seq>.snap: the state of every live memory
// of a collection at the moment MEM.SNAPSHOT ran, everything MEM.ROLLBACK
// restores, and nothing that compaction may move (no rows, no payload
// offsets: a snapshot copies no vector). The engine writes a file once,
// atomically (vfs.WriteFileAtomic: temporary file, fsync, rename, folder
// fsync), and never changes it.
//
// # Layout
//
//	+------------+---------+-----+-----+---------+-------------+-------+---------+-------+
//	| "MEMRLSNP" | version | uid | seq | created | name        | count | entries | xxh64 |
//	| 8 bytes    | u32 = 1 | u64 | u64 | i64     | u16-len     | u64   |         | u64   |
//	+------------+---------+-----+-----+---------+-------------+-------+---------+-------+
//
//	entry: id u64 | q f64 | visits u64 | lastReward f64 | rewardSum f64 | updated i64 |
//	       expires i64 | key u16-len bytes | attrs u32-len bytes
//
// All integers are little-endian; created, updated and expires are unix
// nanoseconds (expires 0: never), key is the memory's external key (""
// for none) and attrs its compact JSON attributes (empty for none).
// Entries are in ascending id order, each id once. The trailing xxh64
// covers every byte before it.
//
// The engine's rollback batch records (package engine/record) carry entries
// in the same layout: AppendEntry and DecodeEntryRest serve both.
//
// # Versions
//
// Version 1 is the only one.
//
// # What a reader refuses
//
// Decode refuses, with an error wrapping ErrDamaged: a file shorter than
// its header, of another magic, that fails its checksum, of another
// version, whose count cannot fit in its bytes, that names another
// collection or sequence number than the one asked for, whose entries are
// cut short or out of id order, or that has bytes past its last entry.
// The engine then lists the snapshot as damaged: Open goes on, and
// MEM.ROLLBACK to it fails (engine/snapshot.go).
package snapfile
