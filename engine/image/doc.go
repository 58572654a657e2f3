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
// The reader checks only the framing, so a new kind of file needs no new
// version of it. The version changes when the framing does; a reader
// refuses any version but its own (ErrVersion).
//
// # The files of a collection image
//
// An image of a collection (package engine writes and reads them:
// engine/collection_export.go and collection_import.go) holds these
// files, in this order (kind: what; the id is 0 unless said):
//
//	1 meta:     the meta file below (KindMeta)
//	2 state:    a full checkpoint (engine/ckptfile) holding this one
//	            collection: config, indexed fields, every live memory with
//	            its sections (history), nrows, paySize, nextID and the
//	            collection sections (snapshot catalog and ghosts, prune
//	            policy; never the compaction generation: the image's files
//	            are generation 0). Its own xxh64 covers it once more.
//	3 vectors:  rows [0, nrows) of the vector file, as stored (dim × f32 LE
//	            each), dead rows included, so that rows need no renumbering
//	4 sums:     the rows' checksums (u64 LE each, engine/sumfile's RowSum):
//	            the source's, not recomputed, so damage in a source row
//	            stays detectable; without vectors.sum's header, which the
//	            importer makes from the meta file
//	5 payloads: bytes [0, paySize) of the payload file, records with their
//	            checksums
//	6 snapshot: (id: the snapshot's seq, not 0) a snapshot file as written
//	            (engine/snapfile), one per snapshot, each seq once
//	7 index:    the saved IVF-PQ index file (ivfpq.FileName), if any
//
// Meta, state, vectors, sums and payloads come once each and in that
// order; then the snapshot files; then at most one index file.
//
// The meta file (Meta, EncodeMeta, DecodeMeta) is MetaSize = 54 bytes,
// integers little-endian:
//
//	offset 0   version          u8 = MetaVersion = 1
//	       1   source uid       u64: the exporting collection's folder uid
//	       9   dim              u32
//	      13   nrows            u32: vector rows (and row checksums) shipped
//	      17   paySize          u64: payload bytes shipped
//	      25   legacyPayloadEnd u64: payload bytes below it carry no checksum
//	      33   nextID           u64: the collection's next memory id
//	      41   memories         u64: live memories in the state file
//	      49   snapshot files   u32: snapshot files that follow
//	      53   index            u8: 1 if an index file follows, else 0
//
// The meta file has no checksum of its own: the frames' CRC-32C, its
// close frame (its size and xxh64) and the end frame guard its bytes, as
// they guard every file's. The importer trusts the meta file once
// Reader.Read has returned io.EOF for it (its close frame matched), and
// the other files once the end frame has matched the whole image.
//
// What a reader refuses: DecodeMeta refuses a meta file of any length
// but MetaSize (cut short, or with bytes after it), of any version but
// MetaVersion (a newer memrl's: a new field or a changed meaning takes a
// new version), and an index flag other than 0 or 1; any other damaged
// byte is refused by the framing before DecodeMeta sees it. The engine's
// importer, which wraps these refusals in engine.ErrBadImage, also
// refuses, among others, a file out of the order above, a kind it does
// not know, an id where none belongs, a dimension of 0 or above
// engine.MaxDim, and files that do not match the meta file (their sizes,
// the snapshot files' count, the index flag, the state's figures).
package image
