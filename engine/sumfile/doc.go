// Package sumfile is the format of a collection's checksum file,
// vectors.sum, and of the checksums that guard the collection's data
// files: one per vector row (kept in vectors.sum) and one after each
// payload (kept in payloads.dat, beside the payload's bytes).
//
// # vectors.sum
//
// The file declares the format of the collection's files and holds one
// checksum per vector row. All integers are little-endian.
//
//	offset 0   magic            [8]byte "MRLVSUM\x00"
//	       8   version          u32 = 1
//	      12   dim              u32
//	      16   legacyPayloadEnd u64: payload bytes below it are of the
//	                            unchecksummed format (no PayloadSum after
//	                            each payload)
//	      24   header checksum  u64: xxhash64 of bytes [0, 24)
//	      32   row checksums    u64 each: row r's at Offset(r) = 32 + 8r
//
// A row's checksum is RowSum: xxhash64 of the row's float32 bytes, mixed
// with the row number, so that a row read from the wrong place fails too.
// The row checksums have no checksum of their own: each guards a row, and
// a damaged one makes its row fail, which verification reports.
//
// # Payload checksums
//
// Each payload of payloads.dat is followed by PayloadSumSize bytes: the
// little-endian PayloadSum of the memory's id, the payload's offset in
// the file and its bytes, so that a payload read for another memory, or
// from another place, fails too.
//
// # Versions
//
// Version 1 is the only one. A collection created before checksums
// existed has no vectors.sum (or an empty one); the engine's recovery then
// sums the rows as found and writes the file, with legacyPayloadEnd set
// to the payload bytes in use, so payloads written before are read as
// before (and are the only data not checked), and every later one carries
// a checksum.
//
// # What a reader refuses
//
// DecodeHeader refuses a header shorter than HeaderSize, one that fails
// its checksum, one with another magic, and one of another version (a
// newer memrl's). A damaged header stops the engine's Open: without it
// the payload file cannot be read. The engine wraps DecodeHeader's errors
// in engine.ErrCorrupt.
package sumfile
