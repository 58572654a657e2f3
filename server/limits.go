package server

// Default request limits. They apply when the corresponding Limits field is
// zero.
const (
	// DefaultMaxInlineLen bounds an inline command line (excluding its line
	// terminator). Redis uses the same 64 KiB (PROTO_INLINE_MAX_SIZE).
	DefaultMaxInlineLen = 64 << 10
	// DefaultMaxBulkLen bounds one bulk string argument. 64 MiB leaves room
	// for memory payloads of several MiB and FP32 vector blobs of dim*4
	// bytes for any realistic dim.
	DefaultMaxBulkLen = 64 << 20
	// DefaultMaxArrayLen bounds the number of elements of one request array
	// (Redis's limit for unauthenticated clients is the same 1M).
	DefaultMaxArrayLen = 1 << 20
	// DefaultMaxCommandLen bounds the sum of all argument lengths of one
	// command, so that MaxArrayLen arguments of MaxBulkLen each cannot be
	// used to exhaust memory.
	DefaultMaxCommandLen = 256 << 20
)

// Limits bounds what one request may make the server read and hold. A zero
// field means "use the default" (see the Default* constants). Negative
// values are treated as zero, i.e. as the default.
type Limits struct {
	MaxInlineLen  int // longest inline command line, in bytes
	MaxBulkLen    int // longest bulk string argument, in bytes
	MaxArrayLen   int // most elements in one request array
	MaxCommandLen int // largest total of argument bytes in one command
}

// withDefaults returns l with every non-positive field replaced by its
// default.
func (l Limits) withDefaults() Limits {
	if l.MaxInlineLen <= 0 {
		l.MaxInlineLen = DefaultMaxInlineLen
	}
	if l.MaxBulkLen <= 0 {
		l.MaxBulkLen = DefaultMaxBulkLen
	}
	if l.MaxArrayLen <= 0 {
		l.MaxArrayLen = DefaultMaxArrayLen
	}
	if l.MaxCommandLen <= 0 {
		l.MaxCommandLen = DefaultMaxCommandLen
	}
	return l
}

// PreAuthLimits are the default request limits for a client that has not
// authenticated yet on a server that requires it, as Redis limits
// unauthenticated clients (at most 10 arguments, 16 KiB bulks): AUTH,
// HELLO, PING and QUIT need no more, and an attacker without the password
// cannot make the server buffer more than this per connection.
var PreAuthLimits = Limits{
	MaxInlineLen:  4 << 10,
	MaxBulkLen:    16 << 10,
	MaxArrayLen:   10,
	MaxCommandLen: 64 << 10,
}

// or returns l with every non-positive field taken from d.
func (l Limits) or(d Limits) Limits {
	if l.MaxInlineLen <= 0 {
		l.MaxInlineLen = d.MaxInlineLen
	}
	if l.MaxBulkLen <= 0 {
		l.MaxBulkLen = d.MaxBulkLen
	}
	if l.MaxArrayLen <= 0 {
		l.MaxArrayLen = d.MaxArrayLen
	}
	if l.MaxCommandLen <= 0 {
		l.MaxCommandLen = d.MaxCommandLen
	}
	return l
}
