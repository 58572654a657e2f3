package client

import (
	"errors"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Error is an error reply from the server. Every error a method returns
// for a reply the server sent is an *Error (network and context errors are
// returned as go-redis gives them). Match the rule it reports with
// errors.Is and the sentinels below (errors.Is(err, client.ErrNoMemory));
// read the server's exact text with errors.As:
//
//	var e *client.Error
//	if errors.As(err, &e) { log.Print(e.Code, e.Msg) }
//
// *Error also has go-redis's RedisError method, so go-redis (and code
// written for it) treats it as a server reply, not a network failure.
type Error struct {
	// Code is the reply's leading word: "ERR", or "NOAUTH", "WRONGPASS",
	// "NOPERM", "OOM", "EXECABORT", "NOPROTO".
	Code string
	// Msg is the rest of the reply, such as
	// `no such collection: "nope"`.
	Msg string
	// Memory is, for a MEM.MADD error, the position (counting from 1) of
	// the memory it names ("ERR memory 3: …"); 0 otherwise.
	Memory int
	// Query is, for a MEM.MRETRIEVE error, the position (counting from 1)
	// of the query it names ("ERR query 3: …"); 0 otherwise.
	Query int

	kind error // the sentinel matched, or nil
}

// Error returns the reply as the server sent it, without the leading '-'.
func (e *Error) Error() string { return e.Code + " " + e.Msg }

// Unwrap returns the sentinel error the reply matches, or nil when it
// matches none (a malformed argument such as "K1 must be an integer").
func (e *Error) Unwrap() error { return e.kind }

// RedisError marks e as a server reply for go-redis (proto.RedisError).
func (e *Error) RedisError() {}

// Sentinel errors, one per rule the server enforces. Each one's text is
// the start of the server's message for it (after "ERR "), and an *Error
// whose message starts with that text (or, for a MEM.MADD error, whose
// message after "memory N: " does) unwraps to it.
var (
	// ErrNoCollection: commands name an existing collection.
	ErrNoCollection = errors.New("no such collection")
	// ErrCollectionExists: a collection name is unique (MEM.CREATE).
	ErrCollectionExists = errors.New("collection already exists")
	// ErrBadName: collection names are 1-128 characters of A-Z a-z 0-9 _ . : - { }.
	ErrBadName = errors.New("invalid collection name")
	// ErrTooManyCollections: a database holds at most --max-collections.
	ErrTooManyCollections = errors.New("too many collections")
	// ErrDimension: a vector has its collection's dimension.
	ErrDimension = errors.New("vector dimension does not match the collection")
	// ErrBadVector: components are finite, at most 1e15 in magnitude in L2
	// and IP collections, and a COSINE vector is not all zero.
	ErrBadVector = errors.New("invalid vector")
	// ErrBadNumber: rewards, Q values and parameters are finite numbers
	// (the server says "value must be …", or names it: "Q must be …").
	ErrBadNumber = errors.New("must be a finite number")
	// ErrBadParam: a parameter is within its documented range (K1, K2,
	// LAMBDA, ALPHA, DIM, ...), and ids are left to assign.
	ErrBadParam = errors.New("parameter out of range")
	// ErrIDExists: memory ids are unique within a collection.
	ErrIDExists = errors.New("memory id already exists")
	// ErrKeyExists: memory keys are unique within a collection; an add
	// with a key in use changes nothing, so a retried add is never stored
	// twice.
	ErrKeyExists = errors.New("memory key already exists")
	// ErrKeyCollision: a key whose 64-bit fingerprint equals another
	// stored key's is refused (astronomically rare; use another key).
	ErrKeyCollision = errors.New("memory key collides with another key's fingerprint")
	// ErrBadKey: keys are 1 to 512 bytes.
	ErrBadKey = errors.New("invalid key")
	// ErrNoMemory: the memory named exists (and has not expired).
	ErrNoMemory = errors.New("no such memory")
	// ErrPayloadTooLarge: a payload is at most 16 MiB.
	ErrPayloadTooLarge = errors.New("payload too large")
	// ErrBadAttrs: attributes are one JSON object of at most 64 KiB,
	// nested at most 16 deep, valid UTF-8, with unique top-level keys.
	ErrBadAttrs = errors.New("invalid attributes")
	// ErrBadTTL: a TTL is a whole, positive number of seconds up to
	// 3153600000 (MEM.EXPIRE also takes zero or less: delete now).
	ErrBadTTL = errors.New("TTL must be")
	// ErrFilter: a filter expression parses and can match some memory
	// (and is not empty); the message gives the column where it goes
	// wrong.
	ErrFilter = errors.New("filter:")
	// ErrCorrupt: data that fails its checksum is never served
	// (MEM.GET, MEM.RETRIEVE … WITHPAYLOAD, MEM.VERIFY).
	ErrCorrupt = errors.New("data file damaged: fails its checksum")
	// ErrLogFailed: after the write-ahead log failed to write or fsync,
	// the database takes no more writes (reads go on).
	ErrLogFailed = errors.New("wal: log failed")
	// ErrCheckpointsStopped: after a failed sync no checkpoint is tried
	// again until the server restarts.
	ErrCheckpointsStopped = errors.New("checkpoints stopped after a failed sync")
	// ErrTooManyOpenFiles: the server had no file descriptor left for
	// the command, which changed nothing; it works again once some are free.
	ErrTooManyOpenFiles = errors.New("out of file descriptors")
	// ErrReplyTooLarge: one reply is at most --max-reply-bytes.
	ErrReplyTooLarge = errors.New("the reply would be")
	// ErrSyntax: an option is known and has its value.
	ErrSyntax = errors.New("syntax error")
	// ErrWrongArity: a command has its number of arguments.
	ErrWrongArity = errors.New("wrong number of arguments")
	// ErrUnknownCommand: the server knows the command (an older server
	// lacks the newest MEM.* commands).
	ErrUnknownCommand = errors.New("unknown command")
	// ErrMaxClients: the server serves at most --maxclients connections.
	ErrMaxClients = errors.New("max number of clients reached")
	// ErrTooManyQueued: one transaction queues at most
	// --max-queued-commands commands.
	ErrTooManyQueued = errors.New("the transaction already holds")
	// ErrWatchUnsupported: memrl has no keys to WATCH, so there is no
	// optimistic locking; transactions run whole at EXEC.
	ErrWatchUnsupported = errors.New("WATCH is not supported")
	// ErrSnapshotExists: snapshot names are unique in a collection.
	ErrSnapshotExists = errors.New("snapshot already exists")
	// ErrNoSnapshot: MEM.ROLLBACK names an existing snapshot.
	ErrNoSnapshot = errors.New("no such snapshot")
	// ErrBadSnapshotName: snapshot names are 1-128 printable ASCII characters.
	ErrBadSnapshotName = errors.New("invalid snapshot name")
	// ErrTooManySnapshots: a collection holds at most 256 snapshots.
	ErrTooManySnapshots = errors.New("too many snapshots")
	// ErrSnapshotDamaged: a snapshot whose file fails its checksum cannot
	// be rolled back to (it is listed, and can be deleted).
	ErrSnapshotDamaged = errors.New("snapshot file damaged")
	// ErrIDPinned: an explicit ID that a snapshot holds for a deleted
	// memory cannot be reused until that snapshot is deleted.
	ErrIDPinned = errors.New("memory id is held by a snapshot")

	// ErrNoAuth (code NOAUTH): authenticate before other commands.
	ErrNoAuth = errors.New("NOAUTH")
	// ErrWrongPass (code WRONGPASS): the user name and password match.
	ErrWrongPass = errors.New("WRONGPASS")
	// ErrNoPerm (code NOPERM): a read-only user runs only reads.
	ErrNoPerm = errors.New("NOPERM")
	// ErrOOM (code OOM): the clients' buffers together stay within
	// --maxmemory; the command was refused and changed nothing. If the
	// request was still arriving, the server also closes the connection,
	// and a command sent on it next may fail with a network error.
	ErrOOM = errors.New("OOM")
	// ErrExecAbort (code EXECABORT): a transaction with a command refused
	// while queuing runs nothing at EXEC.
	ErrExecAbort = errors.New("EXECABORT")

	// ErrBadReply: a reply does not have the shape the protocol documents
	// (a server older or newer than this package, or not memrl).
	ErrBadReply = errors.New("memrl client: unexpected reply")
)

// byPrefix lists the ERR sentinels by the message prefix that selects them.
// INVARIANT: no entry's text is a prefix of another's, so the first match
// is the only one.
var byPrefix = []error{
	ErrNoCollection, ErrCollectionExists, ErrBadName, ErrTooManyCollections,
	ErrDimension, ErrBadVector, ErrBadNumber, ErrBadParam, ErrIDExists,
	ErrKeyExists, ErrKeyCollision, ErrBadKey, ErrNoMemory, ErrPayloadTooLarge,
	ErrBadAttrs, ErrBadTTL, ErrFilter, ErrCorrupt, ErrLogFailed,
	ErrCheckpointsStopped, ErrTooManyOpenFiles, ErrReplyTooLarge, ErrSyntax,
	ErrWrongArity, ErrUnknownCommand, ErrMaxClients, ErrTooManyQueued,
	ErrWatchUnsupported, ErrSnapshotExists, ErrNoSnapshot, ErrBadSnapshotName,
	ErrTooManySnapshots, ErrSnapshotDamaged, ErrIDPinned,
}

// byCode maps the non-ERR codes to their sentinels.
var byCode = map[string]error{
	"NOAUTH": ErrNoAuth, "WRONGPASS": ErrWrongPass, "NOPERM": ErrNoPerm,
	"OOM": ErrOOM, "EXECABORT": ErrExecAbort,
}

// convertErr turns a go-redis server error into an *Error; other errors
// (nil, network, context, redis.Nil) are returned unchanged.
func convertErr(err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	var re redis.Error
	if !errors.As(err, &re) || errors.Is(err, redis.Nil) {
		return err
	}
	return parseError(re.Error())
}

// parseError reads an error reply's text (without the '-').
func parseError(s string) *Error {
	code, msg, _ := strings.Cut(s, " ")
	e := &Error{Code: code, Msg: msg}
	if k, ok := byCode[code]; ok {
		e.kind = k
		return e
	}
	if code != "ERR" {
		return e
	}
	body := msg
	// MEM.MADD names the memory at fault: "memory 3: <reason>", and
	// MEM.MRETRIEVE the query: "query 3: <reason>".
	if i, after := cutPosition(msg, "memory "); i > 0 {
		e.Memory, body = i, after
	} else if i, after := cutPosition(msg, "query "); i > 0 {
		e.Query, body = i, after
	}
	e.kind = matchKind(body)
	return e
}

// cutPosition reads msg as word, a position counting from 1, ": " and the
// rest, and returns the position and the rest; 0 if msg is not that.
func cutPosition(msg, word string) (int, string) {
	rest, ok := strings.CutPrefix(msg, word)
	if !ok {
		return 0, msg
	}
	n, after, ok := strings.Cut(rest, ": ")
	if !ok {
		return 0, msg
	}
	if i, err := strconv.Atoi(n); err == nil && i > 0 {
		return i, after
	}
	return 0, msg
}

// matchKind finds the sentinel a message reports: by prefix first, then as
// the reason after a context ("collection \"c\": data file damaged: …").
func matchKind(msg string) error {
	for _, k := range byPrefix {
		if strings.HasPrefix(msg, k.Error()) {
			return k
		}
	}
	for _, k := range byPrefix {
		if strings.Contains(msg, ": "+k.Error()) {
			return k
		}
	}
	// The argument parser names the number: "reward must be a finite
	// number, got "NaN"". Only the first word may precede the rule, so
	// that a key or name quoted later in a message cannot match.
	if _, rest, ok := strings.Cut(msg, " "); ok && strings.HasPrefix(rest, ErrBadNumber.Error()) {
		return ErrBadNumber
	}
	return nil
}
