// Package image is the stream format of a collection image: one
// collection of a memrl database with all its state, exported by one
// database (engine.Collection.BeginExport, Export.WriteTo) and imported by
// another (engine.DB.ImportCollection). Cluster resharding carries it
// through a shard's raft log in chunks; nothing in it depends on where it
// is cut.
//
// An image is a sequence of files, each a stream of bytes with a kind and
// an id, framed so that a reader can verify every byte as it streams it,
// holding at most one frame (MaxFrame bytes) in memory:
//
//	image:  header | file* | end frame
//	header: magic "MEMRLIMG" (8 bytes) | version u32 = 1 | crc32c u32 of the 12 bytes before
//	file:   begin frame | data frame* | close frame
//	frame:  type u8 | len u32 | body (len bytes) | crc32c u32 of type, len and body
//
//	type 'B' begin: kind u8 | id u64                   (body 9 bytes)
//	type 'D' data:  1 to MaxFrame bytes of the file     (in order)
//	type 'C' close: size u64 | xxh64 u64 of the file's bytes (body 16 bytes)
//	type 'Z' end:   files u32 | bytes u64 | xxh64 u64  (body 20 bytes)
//
// All integers are little-endian. crc32c is CRC-32 with the Castagnoli
// polynomial. The end frame counts the files and the image's bytes before
// it, and xxh64 hashes those bytes; a reader reports the image complete
// only once the end frame matches them, so a stream cut anywhere (even at
// a frame boundary, where every frame seen is intact) is refused, as is a
// frame out of place (data outside a file, a begin inside one), a frame
// longer than MaxFrame, an unknown frame type, or a file whose close frame
// does not match the bytes read. Nothing is read past the end frame.
//
// What the files hold is the writer's business (package engine defines
// the kinds and ids it writes: engine/collection_export.go); the reader
// checks only the framing, so a new kind needs no new version of this
// format. The version changes when the framing does; a reader refuses
// any version but its own (ErrVersion).
package image
