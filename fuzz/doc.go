// Package fuzz holds the native Go fuzz targets of memrl. It has no
// non-test code; the targets live in *_test.go files so that they build
// only under "go test".
//
// # Targets
//
// FuzzReadCommand feeds arbitrary bytes to server.Reader, the RESP2 request
// parser (RESP arrays of bulk strings and inline commands with Redis's
// quoting rules), reading commands until the first error, once with the
// default limits and once with tight ones. Invariants checked on every
// input:
//
//   - the reader never panics, and ends with io.EOF, io.ErrUnexpectedEOF or
//     a *server.ProtocolError, never another error;
//   - every command it returns has 1..MaxArrayLen arguments, each at most
//     MaxBulkLen bytes, in total at most MaxCommandLen;
//   - memory allocated while parsing stays within a constant plus a small
//     multiple of the input length: a tiny input that declares a 64 MiB
//     bulk string or a million-element array must not make the reader
//     allocate the declared size up front;
//   - re-encoding the parsed commands as RESP arrays and parsing that again
//     yields exactly the same arguments (the parser is a function of the
//     bytes, not of how they were split or quoted).
//
// # Corpus
//
// The seed corpus is testdata/fuzz/FuzzReadCommand/: well-formed RESP and
// inline commands (quotes, escapes, pipelines), truncated frames, and
// hostile inputs (huge declared lengths, bad counts, unbalanced quotes,
// binary garbage). Plain "go test ./fuzz" runs every seed as a regression
// test, so a crasher found by fuzzing is kept by copying its file from the
// fuzz cache (go test prints the path) into that directory.
//
// # Running
//
// CI runs each target for a fixed time:
//
//	go test ./fuzz -run=^$ -fuzz=FuzzReadCommand -fuzztime=20s
//
// Longer local runs use a larger -fuzztime; -parallel bounds the workers on
// a shared machine. When the fuzzer finds a new interesting input it
// minimizes it (up to 60 s by default) and the execs/sec line may show 0
// meanwhile; minimization still runs the target and checks the
// invariants. -fuzzminimizetime=1s keeps short runs exploring instead.
package fuzz
