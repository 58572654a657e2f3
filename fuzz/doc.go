// Package fuzz holds memrl's fuzz target for the RESP request parser and
// documents every native Go fuzz target in the tree. It has no non-test
// code; its subpackage corpus keeps the generated seed corpora current.
//
// Every decoder of outside or on-disk input has a target. The targets of
// unexported decoders live in the decoder's package, in *_fuzz_test.go (or
// fuzz_test.go) files. Each target's seed corpus is committed in
// testdata/fuzz/FuzzXxx/ beside it, in the format of Go's fuzzing engine.
//
// # Targets
//
// FuzzReadCommand (./fuzz) feeds arbitrary bytes to server.Reader, the
// RESP2 request parser (RESP arrays of bulk strings and inline commands
// with Redis's quoting rules), reading commands until the first error,
// once with the default limits and once with tight ones. Checks:
//
//   - the reader never panics, and ends with io.EOF, io.ErrUnexpectedEOF or
//     a *server.ProtocolError, never another error;
//   - every command it returns has 1..MaxArrayLen arguments, each at most
//     MaxBulkLen bytes, in total at most MaxCommandLen;
//   - memory allocated while parsing stays within a constant plus a small
//     multiple of the input length: a tiny input that declares a 64 MiB
//     bulk string or a million-element array must not make the reader
//     allocate the declared size up front;
//   - the same bytes delivered one byte per read give the same commands
//     and the same final error (the parser does not depend on how the
//     network split the input);
//   - re-encoding the parsed commands as RESP arrays and parsing that again
//     yields exactly the same arguments.
//
// FuzzParseNodes (./fuzz) parses arbitrary bytes as a cluster nodes file
// (cluster.ParseNodes: version header, tab-separated node lines, optional
// CRC-32C sum line). Checks: no panic; an accepted file names valid,
// unique node ids, addresses with a raft port, and shards 0..S-1 none of
// them empty; formatting the nodes (cluster.FormatNodes, as WriteNodes
// does) and parsing that gives the same nodes, and formatting is a fixed
// point.
//
// FuzzMemArgs (./server) splits arbitrary bytes at '\n' into the
// arguments of MEM.ADD or MEM.RETRIEVE after the collection name, parses
// the vector (FP32 blob or VALUES d v1 … vd) and the options with the
// argument parsers of server/commands_mem_args.go, and hands the result
// to a MemFS engine as the commands do. Checks: no parser panics; vector
// consumes exactly its arguments and returns what they encode (the blob's
// bits, or strconv's float32 of each value); float accepts only finite
// numbers and int and uint64 agree with strconv; an add or query the
// engine accepts has the collection's dimension and finite components
// (of magnitude at most engine.MaxComponent in L2 and IP collections), is
// stored as such, and a retrieval never scores a result NaN; an add with
// ATTRS, KEY or TTL stores the attributes compact, the key (which then
// finds the memory) and an expiry.
//
// FuzzMAddArgs (./server) splits arbitrary bytes at '\n' into the
// arguments of MEM.MADD after the collection name, parses its memories
// with parseMemory (server/commands_batch.go) and hands the batch to
// AddBatch on a MemFS engine. Checks: no parser panics; every memory
// parsed starts at its vector keyword; a batch is added whole (every
// memory stored with the id returned, its vector and payload) or not at
// all (the count unchanged, an error naming a memory within the batch).
//
// FuzzOpenDamagedSegment (./wal) overwrites, truncates or extends one
// segment of a real two-segment log at a fuzzed place. Open must either
// refuse it with a *wal.CorruptionError, changing no file, or open it and
// replay a prefix of what was written: dense LSNs from 1, each record the
// one written with that LSN. Cutting the last segment short (a torn tail)
// is never refused.
//
// FuzzOpenSegmentBytes (./wal) makes arbitrary bytes the only segment of
// a log (optionally after a valid header, so that the fuzzer works on
// record frames). Open must not panic, fails only with a
// *wal.CorruptionError that changes nothing, allocates at most a constant
// plus a small multiple of the file size whatever the length fields say,
// and recovers exactly the frames at the start of the file, in order; the
// log then takes an append, and a reopen replays the same records plus the
// new one.
//
// FuzzDecodeRecord (./engine) decodes arbitrary bytes as each engine log
// record type (create, drop, add of a fuzzed dimension with or without
// attributes, key and expiry, delete, Q update, attribute, payload and
// expiry updates),
// as replay does. Refusals wrap the engine's malformed-record error,
// allocation is bounded by the record size, and an accepted record
// re-encodes to exactly its bytes.
//
// FuzzDecodeCheckpoint (./engine) decodes arbitrary bytes as a checkpoint
// file; with its bool argument set, the trailing checksum is first made
// right so that the decoder behind it is reached. Refusals wrap
// engine.ErrCorruptCheckpoint; allocation is bounded by the file size
// whatever the counts declare; an accepted checkpoint has a consistent
// kind and sequence number, valid collection configs, tombstones only in
// a delta, every memory within its collection's recorded vector and
// payload file sizes (checked without overflow), and re-encodes stably.
// Seeds: real full checkpoints of versions 1 to 4 and deltas of versions
// 3 and 4 (version 4's memories with attributes, keys and expiry).
//
// FuzzDecodeHistLog (./engine) decodes arbitrary bytes as a memory's
// history log, the body of a checkpoint's history section (engine/
// history.go). Allocation is bounded whatever the entry count declares;
// an accepted log holds 1 to MaxHistoryLen entries, pushing them again
// gives a log that decodes to the same entries and LSN, and trimming it to
// one entry keeps the newest. Seeds: logs made by the encoder (one entry,
// a full history, float rewards with time and visits going backwards, a
// log bounded at 3).
//
// FuzzOpenCheckpoint (./engine) opens a real database (vector, payload
// and log files built once per process) whose CHECKPOINT and CHECKPOINT.1
// hold the fuzzed bytes, driving decoding, the merge of the delta and the
// loading of collections. Open must not panic; a database it opens must
// serve Info, a retrieval and Close, and Get of every memory succeeds or
// reports engine.ErrCorrupt (a memory pointed at the wrong bytes of its
// files fails their checksum when read).
//
// FuzzOpenIndex (./ivfpq) builds an IVF-PQ index from arbitrary bytes as
// Open does from its mapping (optionally with every checksum fixed first),
// then verifies and searches it. Refusals wrap ivfpq.ErrCorrupt or
// ErrVersion; opening allocates at most a constant plus a small multiple
// of the file size; Verify succeeds or wraps ErrCorrupt, a search of every
// list succeeds exactly when Verify did, and it returns at most k rows,
// each below Rows().
//
// FuzzFilterParse (./engine/filter) parses an arbitrary filter expression
// and evaluates it on arbitrary attribute bytes. Checks: Parse refuses only
// with a *filter.SyntaxError whose column lies in the expression; an
// accepted expression's String parses to the same String; Match never
// panics, whatever the bytes; when ValidateAttrs accepts the bytes, Match
// gives the same answer on them and on their compact form, and agrees
// with a reference evaluator built on encoding/json; and a one-row bitmap
// index of the expression's fields plans a superset of the match (exactly
// it when the plan says exact), and holds nothing once the row is removed.
//
// FuzzReadImage (./engine/image) reads arbitrary bytes as a collection
// image (the stream of an export, engine/image/doc.go). Checks: no panic;
// an image it accepts, written again file by file, reads back the same
// files (kinds, ids and bytes). Refusals wrap image.ErrCorrupt or
// ErrVersion. Seeds: images written by the Writer.
//
// FuzzDecodeEntry (./fuzz) decodes arbitrary bytes as a replica's raft log
// entry (replica.DecodeEntry: version, leader time, arguments, xxhash64).
// Checks: no panic; a refusal wraps replica.ErrBadEntry; an accepted
// entry has 1..MaxEntryArgs arguments and re-encodes to exactly the input.
// Its seeds are valid, cut and bit-flipped encodings (f.Add).
//
// FuzzDecodeBatch (./fuzz) decodes arbitrary bytes as a batch entry, many
// commands in one raft entry (replica.DecodeBatch, entry version 2).
// Checks: no panic; a refusal wraps replica.ErrBadEntry; an accepted batch
// re-encodes to exactly the input.
//
// # Corpus
//
// "go test" runs every committed seed of every target as a regression
// test. The hand-written seeds of FuzzReadCommand are plain files; the
// seeds named seed-* are generated from real encoded data (log segments,
// checkpoints, index files, client commands) by each package's
// TestFuzzSeeds* test, which fails when a committed seed differs from
// what the encoders produce now. After a format change, regenerate them:
//
//	go test ./engine -run 'TestFuzzSeeds' -update-fuzz-seeds
//
// A crasher found by fuzzing is kept by copying its file from
// testdata/fuzz/FuzzXxx/ (go test writes it there and prints its name)
// into the committed corpus, and it becomes a regular test beside the fix.
//
// # Running
//
// CI (.ci/run) runs each target for a count of executions (a few seconds
// each) after the tests, and fails if a Fuzz function in the tree is
// missing from its list. Counts, not durations: with a duration, Go 1.26's
// coordinator can fail a run with "context deadline exceeded" and no
// crashing input when the time runs out mid-input (golang/go#75804). To run
// one longer, from the repository root (a duration may still end that way;
// only a written testdata/fuzz input is a finding):
//
//	go test ./engine -run='^$' -fuzz='^FuzzOpenCheckpoint$' -fuzztime=10m -parallel=1
//
// -fuzz must match exactly one target of the package. -parallel bounds the
// workers on a shared machine (it defaults to GOMAXPROCS). When the fuzzer
// finds a new interesting input it minimizes it (up to 60 s by default)
// and the execs/sec line may show 0 meanwhile; minimization still runs
// the target and checks the invariants. -fuzzminimizetime=1s keeps short
// runs exploring instead.
package fuzz
