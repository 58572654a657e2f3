// Package ckptfile is the format of memrl's checkpoint files: the
// magic, the versions, the header, the collections and memories, the
// sections' framing, the trailing checksum, and the refusals of a reader.
// Writer encodes a file as it is produced; Verify and DecodeBody read one,
// handing each collection and memory to the caller's Visitor as it is read
// (no copy of the memories in this package's types). The engine
// (engine/checkpoint_format.go) converts them to and from its own types,
// and checks what is its own to check (below).
//
// # Files and layout
//
// A checkpoint is a chain of files: a full checkpoint, CHECKPOINT, and the
// deltas written after it, CHECKPOINT.1, CHECKPOINT.2, ..., each holding
// only the memories changed (and the ids deleted) since the one before.
// Every file is replaced atomically (written to a temporary file, fsynced,
// renamed, folder fsynced). Together they hold the state of every
// collection as of some moment during the last checkpoint, and the WAL
// position from which replay must start to reach the present.
//
// Version 6, written as the collections are copied (a streaming encoder
// needs no buffer the size of the file):
//
//	+-----------+---------+------+---------+-----+---------+---------+-----------+----------------+-------+
//	| "MEMRLCKP"| version | kind | chainID | seq | walLSN  | nextUID | ncoll u32 | collections... | xxh64 |
//	| 8 bytes   | u32 = 6 | u8   | u64     | u32 | u64     | u64     |           |                | u64   |
//	+-----------+---------+------+---------+-----+---------+---------+-----------+----------------+-------+
//
//	kind:       0 full (seq 0), 1 delta (seq 1, 2, ... within the chain of the full
//	            checkpoint with the same chainID)
//	collection: uid u64 | name u16-len bytes | config (record.Config, ConfigSize bytes) |
//	            indexed fields (n u8 | n × name u8-len bytes; record.AppendFieldList) |
//	            tombstone batches... | u32 0 | memory batches... | u32 0 |
//	            nrows u32 | paySize u64 | nextID u64 | collection sections
//	tombstone batch: count u32 (1..MaxBatch) | count × id u64    (deltas only)
//	memory batch:    count u32 (1..MaxBatch) | count × memory
//	memory:     id u64 | row u32 | payOff u64 | payLen u32 | created i64 | q f64 | visits u64 |
//	            lastReward f64 | rewardSum f64 | updated i64 |                   (72 bytes, then)
//	            expires i64 | key u16-len bytes | attrs u32-len bytes |         (15 bytes and up)
//	            memory sections
//
// expires is the absolute expiry (unix nanoseconds; 0: never), key the
// external key ("" for none), attrs the compact JSON attributes (empty for
// none); see engine/attrs.go. Collection, Memory and End are these
// fields.
//
// A delta lists every live collection (one missing was dropped); applying
// it removes its tombstones, then inserts or replaces its memories, then
// takes its sizes and next id. The file sizes and next id follow the
// memories because they are read with the last chunk of the copy.
//
// Sections (below) carry the state of later features: ghosts,
// compaction, history and so on, each under its own tag.
//
// Versions 1 to 5 are still read. Version 5 is version 6 without the
// collection and memory sections. Version 4 is version 5 without the
// indexed fields. Version 3 is version 4 with the memory
// record's first 72 bytes only (no expiry, key or attributes). Versions 1
// and 2 (full checkpoints only) are version 3 without kind, chainID, seq
// and tombstones. Version 1 held the
// sizes, and a u64 memory count, before one run of memories:
//
//	collection v1: uid | name | config | nrows u32 | paySize u64 | nextID u64 |
//	               nmem u64 | nmem × memory
//
// The trailing xxh64 covers every byte before it. nrows and paySize are the
// vector and payload file sizes that were fsynced before the checkpoint was
// written; recovery trusts nothing past them.
//
// # Sections
//
// Sections are how a checkpoint carries state that is neither a memory's
// core record nor a file size, without a new format version for every
// feature. From version 6 each collection ends with its sections, and each
// memory record with its own:
//
//	collection sections: n u16 | n × (tag u16 | len u32 | bytes)
//	memory sections:     n u8  | n × (tag u8  | len u32 | bytes)
//
// The tags are this package's (the Sect and MemSect constants), and so is
// each section's layout; the engine makes and loads each section's state
// (engine/checkpoint_sections.go names the file that owns each tag), and
// DecodeBody asks its Visitor which tags are known. A collection's
// sections are read with its sizes (the last chunk of a copy, under the
// collection's read lock), and a delta carries them whole: applying a
// delta replaces the sections before it. A memory's sections travel with
// the memory (a delta that holds the memory holds all of them).
//
//	SectSnapshots (1):    version u8 = 1 | nextSeq u64 |
//	                      nsnap u32  | nsnap × (seq u64 | created i64 | count u64 | name u16-len bytes) |
//	                      nghost u32 | nghost × (id u64 | row u32 | payOff u64 | payLen u32 |
//	                                             created i64 | expires i64 | key u16-len bytes |
//	                                             attrs u32-len bytes)
//	                      (AppendSnap, DecodeSnap; the snapshots' memories are in their
//	                      files, package engine/snapfile)
//	SectCompact (2):      version u8 = 1 | gen u64   (the files' generation; none for 0)
//	SectPrunePolicy (3):  version u8 = 1 | setAt i64 | lastAt i64 | lastCount u64 | policy
//	                      (policy: package engine/record's AppendPolicy, as the prune
//	                      policy record carries it)
//	SectTest (0xFFFF):    written by tests only
//	MemSectHistory (1):   the memory's history log (package engine/histlog)
//	MemSectTest (0xFF):   written by tests only
//
// Each section's version byte is for a later layout: a version this build
// does not read is damage. A snapshot section is refused when cut short or
// long, when a snapshot's seq is 0 or not below nextSeq or its name is one
// the engine refuses, or when a ghost lies past the collection's rows; a
// compaction section of another length; a prune policy section cut short
// or long, or whose policy record.ReadPolicy or the engine refuses.
//
// An unknown tag is refused as damage (ErrCorrupt): a section is
// state, and a build that does not know it would silently drop it at its
// next checkpoint. A tag appears at most once per collection or memory.
//
// # What a reader refuses
//
// Every refusal wraps ErrCorrupt: a file too short for a header and a
// checksum, another magic, a checksum that does not match (Verify); a
// version outside 1 to Version, a kind other than full or delta, a full
// checkpoint with a sequence number or a delta without one (DecodeHeader);
// counts that cannot fit in the bytes left, a batch above MaxBatch,
// tombstones in a full checkpoint, an unknown or repeated section tag, a
// file cut short or with bytes past its last collection (DecodeBody). The
// reader's Visitor refuses the rest, which DecodeBody wraps in ErrCorrupt
// naming the collection (and the memory): the engine refuses an invalid
// config or list of indexed fields, a memory section that does not decode,
// and a memory that lies past its collection's recorded file sizes
// (Memory.InBounds; the sizes follow the memories, so the check is made at
// End), and, as it loads them, a collection section that does not decode.
// memrl never guesses past a damaged checkpoint: the operator restores it.
package ckptfile
