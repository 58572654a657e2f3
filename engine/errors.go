package engine

import (
	"errors"

	"github.com/memrl/memrl/engine/filter"
	"github.com/memrl/memrl/wal"
)

// Sentinel errors. Each names the rule it enforces; callers match them with
// errors.Is, and the server turns them into ERR replies.
var (
	// ErrCollectionExists: a collection name is unique within a database.
	ErrCollectionExists = errors.New("collection already exists")
	// ErrNoCollection: operations name an existing collection.
	ErrNoCollection = errors.New("no such collection")
	// ErrBadName: collection names are 1 to 128 bytes of [A-Za-z0-9_.:{}-]
	// (braces for cluster hash tags).
	ErrBadName = errors.New("invalid collection name: use 1-128 characters of A-Z a-z 0-9 _ . : - { }")
	// ErrDimension: every vector of a collection has the collection's dimension.
	ErrDimension = errors.New("vector dimension does not match the collection")
	// ErrBadVector: vector components are finite (no NaN or Inf), of
	// magnitude at most MaxComponent in L2 and IP collections (so that no
	// similarity overflows), and a COSINE collection's vectors are not all
	// zero.
	ErrBadVector = errors.New("invalid vector")
	// ErrBadNumber: rewards, Q values and learning parameters are finite.
	ErrBadNumber = errors.New("value must be a finite number")
	// ErrBadParam: a parameter is out of its documented range.
	ErrBadParam = errors.New("parameter out of range")
	// ErrIDExists: memory ids are unique within a collection.
	ErrIDExists = errors.New("memory id already exists")
	// ErrNoMemory: rewards and reads name existing memories.
	ErrNoMemory = errors.New("no such memory")
	// ErrPayloadTooLarge: a payload is at most MaxPayload bytes.
	ErrPayloadTooLarge = errors.New("payload too large")
	// ErrBadAttrs: a memory's attributes are one JSON object of at most
	// MaxAttrs bytes, nested at most MaxAttrsDepth deep, valid UTF-8, with
	// unique top-level keys and numbers within float64's range (attrs.go).
	// It is filter.ErrBadAttrs, so errors.Is matches either.
	ErrBadAttrs = filter.ErrBadAttrs
	// ErrBadKey: a memory's key is 1 to MaxKeyLen bytes.
	ErrBadKey = errors.New("invalid key: keys are 1 to 512 bytes")
	// ErrKeyExists: keys are unique within a collection; an add with a
	// key in use fails (delete the memory first to replace it).
	ErrKeyExists = errors.New("memory key already exists")
	// ErrKeyCollision: keys are indexed by a 64-bit fingerprint, and a key
	// whose fingerprint equals that of a different key already stored is
	// refused, never merged with it. It is astronomically rare (about
	// n²/2^65 for n keys); use another key.
	ErrKeyCollision = errors.New("memory key collides with another key's fingerprint")
	// ErrLogGap: Open refuses a database whose write-ahead log does not
	// reach back to its checkpoint: records the checkpoint relies on the
	// log for are missing (wal/ emptied, truncated or restored from an
	// older copy; its oldest segments lost). Replaying what is left would
	// silently lose them, and before this check new records were numbered
	// below the checkpoint, where the next replay skipped them. The error
	// names the LSNs; Options.AcceptLogGap (memrl serve --accept-log-gap)
	// opens anyway (recover.go). It is wal.ErrGap.
	ErrLogGap = wal.ErrGap
	// ErrCheckpointsStopped: after a checkpoint failed to sync a file it
	// depends on, no checkpoint is attempted again (a later fsync that
	// succeeds proves nothing). Writes go on, kept by the log; restart
	// the process to recover and checkpoint again.
	ErrCheckpointsStopped = errors.New("checkpoints stopped after a failed sync; restart to recover")
	// ErrTooManyOpenFiles: a command that must open a collection file
	// fails, changing nothing, when the process has no file descriptor
	// left (EMFILE or ENFILE) even after closing the idle ones. It is not
	// sticky: the log and every other collection go on, and the command
	// works again once descriptors are free.
	ErrTooManyOpenFiles = errors.New("out of file descriptors: too many open files; raise the limit (ulimit -n) or lower the open-files cap")
	// ErrTooManyCollections: a database holds at most Options.MaxCollections
	// collections.
	ErrTooManyCollections = errors.New("too many collections")
	// ErrCorrupt: data read from a collection's files matches its
	// checksum, or it is not served. A vector row or payload that fails
	// is reported (an error on the command that read it, the log, and
	// MEM.VERIFY), never returned.
	ErrCorrupt = errors.New("data file damaged: fails its checksum")
	// ErrClosed: the database was closed.
	ErrClosed = errors.New("database is closed")
)
