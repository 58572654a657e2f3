// Package client is memrl's Go client: one typed method for each MEM.*
// command of docs/PROTOCOL.md, on github.com/redis/go-redis/v9.
//
// # Connecting
//
// New takes either an address (it then makes a go-redis client that never
// retries a command, since a retried MEM.ADD whose first reply was lost
// would store the memory twice) or a go-redis UniversalClient you made:
//
//	c, err := client.New(client.Options{Addr: "127.0.0.1:6390"})
//	...
//	defer c.Close()
//
// A Client is safe for concurrent use.
//
// # Commands
//
// Each method sends one command (docs/PROTOCOL.md has their full rules):
//
//	MEM.CREATE, MEM.DROP, MEM.LIST     Create, Drop, List
//	MEM.INFO, MEM.VERIFY               Info, Verify
//	MEM.CHECKPOINT [FULL]              Checkpoint
//	MEM.ADD, MEM.MADD                  Add, MAdd
//	MEM.RETRIEVE, MEM.MRETRIEVE         Retrieve, RetrieveMany
//	MEM.REWARD [NEXTQ]                 Reward, RewardNextQ
//	MEM.GET, MEM.MGET [WITHVECTOR]     Get, MGet
//	MEM.DEL [FILTER]                   Del, DelFilter
//	MEM.SCAN, MEM.COUNT [FILTER]       Scan (and the iterator ScanAll), Count, CountFilter
//	MEM.SETATTR, MEM.GETATTR           SetAttr, GetAttr
//	MEM.SETPAYLOAD, MEM.SETVECTOR      SetPayload, SetVector
//	MEM.EXPIRE, MEM.PERSIST, MEM.TTL   Expire, Persist, TTL
//	MEM.INDEX coll ADD|DROP|LIST       IndexAdd, IndexDrop, IndexList
//	MEM.PRUNE                          Prune
//	MEM.HISTORY [COUNT]                History
//	MEM.SNAPSHOT, MEM.SNAPSHOTS        Snapshot, Snapshots
//	MEM.ROLLBACK, MEM.DELSNAPSHOT      Rollback, DelSnapshot
//	MEM.COMPACT [WAIT]                 Compact, CompactWait
//
// Filters (RetrieveOptions.Filter, ScanOptions.Filter, DelFilter,
// CountFilter) are expressions of the language of docs/PROTOCOL.md
// "Filters", sent as they are. Commands the client does not wrap (INFO,
// CONFIG GET, SLOWLOG) go through Redis().
//
// # Types
//
// Vectors are []float32, always sent as FP32 blobs (little-endian float32
// bytes: EncodeFP32). Results are structs with float64 fields (Result,
// Memory, CollectionInfo): the server sends floats as decimal strings in
// their shortest round-trip form, which parse exactly. Attributes are
// map[string]any, sent and read as JSON (numbers come back as float64).
// Payloads are []byte, never decoded. A memory is named by a Ref: ID(7) or
// Key("task-9"), the protocol's `id | KEY k`.
//
// Each command's options are a struct whose zero value means the server's
// default; a field where zero is a meaningful choice different from the
// default (AddOptions.ID, AddOptions.Q, RetrieveOptions.Lambda, ...) is a
// pointer, sent only when set. Options may be nil.
//
// # Errors
//
// An error reply from the server is an *Error (Code, Msg, and for MEM.MADD
// the position of the memory at fault). It unwraps to the sentinel of the
// rule it reports, so callers test the rule with errors.Is:
//
//	_, err := c.Add(ctx, "plans", vec, &client.AddOptions{Key: "task-9"})
//	if errors.Is(err, client.ErrKeyExists) { ... } // already stored
//
// Replies the server did not send (network failures, a closed client, a
// cancelled context) are go-redis's and the context's errors, unchanged.
// A mistake found before anything is sent (attributes that cannot be
// encoded as JSON, a TTL that is not whole seconds) is an error of this
// package that is not an *Error; nothing is sent then.
//
// # Pipelines and transactions
//
// Pipeline and TxPipeline (MULTI/EXEC) queue the same typed commands; each
// returns a *Cmd whose Result is read after Exec. Pipelined writes share
// one fsync on the server; a transaction runs with no other client's
// command between its commands, and without rollback (each command
// succeeds or fails alone). memrl has no WATCH: a transaction's writes
// cannot depend on what its reads return.
//
// # Versions
//
// The methods follow docs/PROTOCOL.md of the same commit. A server older
// than the client answers a command it lacks with ErrUnknownCommand, and
// an option it lacks with ErrSyntax. Unknown fields in replies are
// ignored, so a newer server's additions do not break this client.
package client
