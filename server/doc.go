// Package server is memrl's network front end: a RESP2 protocol layer and a
// TCP server loop that dispatches commands to registered handlers. The core
// (reader, writer, connections, built-in commands) knows nothing of the
// storage engine; the memory commands (MEM.*, commands_mem*.go, the
// data-model commands of commands_attrs.go and the batches and scans of
// commands_batch.go) are registered on top of it with Server.Register and
// are the only files that import it.
//
// # Requests
//
// A request is either a RESP array of bulk strings or an inline command
// line (Reader.ReadCommand). The first byte decides: '*' starts an array,
// anything else an inline line.
//
//	array:   "*" <n> CRLF  n × ( "$" <len> CRLF <len bytes> CRLF )
//	inline:  <line> ( CRLF | LF )
//
// Counts are canonical decimal integers (no '+', no leading zeros).
// "*0" and "*-1" arrays and blank inline lines are skipped. Inline lines are
// split on blanks with Redis's quoting rules: "double quotes" understand
// \xHH \n \r \t \b \a and backslash-escaped characters, 'single quotes'
// understand only \', and a closing quote must end its argument.
//
// Limits (Limits, defaults in parentheses): inline line length (64 KiB),
// bulk string length (64 MiB), array elements (1M), total argument bytes of
// one command (256 MiB). Declared lengths are never allocated up front:
// storage grows with the bytes actually received, so a client cannot make
// the server reserve 64 MiB by sending a 20-byte header.
//
// A malformed or over-limit frame is a *ProtocolError. The stream cannot be
// resynchronised after one, so the server answers
// "-ERR Protocol error: <reason>" (reasons as in Redis: "invalid multibulk
// length", "invalid bulk length", "too big inline request", "unbalanced
// quotes in request", "expected '$', got 'x'", ...) and closes that
// connection; every other connection is unaffected.
//
// Arguments returned by the Reader alias its buffers and are valid only
// until the next ReadCommand; handlers therefore get arguments that are
// valid only while they run and must copy what they keep.
//
// # Replies
//
// Writer produces RESP2 replies into a buffer: simple strings, errors
// ("-ERR msg", or "-CODE msg" for a Redis code such as WRONGTYPE or
// NOPROTO), integers, bulk strings, the null bulk string "$-1", array
// headers, and floats as bulk strings in shortest round-trip form
// (strconv.FormatFloat(f, 'g', -1, 32 or 64); infinities and NaN as "inf",
// "-inf", "nan"). CR and LF inside simple strings and errors are replaced by
// spaces so that a reply can never break framing.
//
// # Connections and pipelining
//
// Each connection is served by one goroutine that reads a command, runs its
// handler, and repeats. Replies are flushed only when the Reader has used up
// its buffered input and is about to wait on the socket, so a pipeline that
// arrives together (redis-benchmark -P, go-redis Pipeline) is executed back
// to back and answered with one write per input segment, not one per
// command. Handlers may block (for example until a write is durable); that
// delays only their own connection.
//
// A handler replies exactly once, or returns an error instead of replying
// (sent as an error reply; see HandlerFunc). A handler that panics is
// recovered: its client gets an error reply, its connection is closed and
// the panic is logged; the server keeps running.
//
// Unknown commands get "-ERR unknown command 'foo', with args beginning
// with: 'a' 'b' " and too few arguments "-ERR wrong number of arguments for
// 'foo' command", as in Redis. Command names are case-insensitive.
//
// # Shutdown
//
// Shutdown closes the listeners, closes idle connections, and lets each
// executing command finish and its replies flush before closing that
// connection; pipelined commands not yet started are dropped. If its
// context ends first, the remaining connections are closed forcibly and
// handlers' contexts (Ctx.Context) are cancelled.
//
// # Built-in commands
//
// Enough of Redis's connection commands for redis-cli, redis-benchmark and
// go-redis v9 to work unmodified:
//
//	PING [msg]                  +PONG, or msg as a bulk string
//	ECHO msg                    msg
//	HELLO [2|3 [AUTH u p] [SETNAME n]]
//	                            only RESP2: 3 gets "-NOPROTO unsupported
//	                            protocol version", on which clients fall back
//	                            to RESP2; none or 2 gets Redis's field/value
//	                            array (server, version, proto, id, mode,
//	                            role, modules)
//	AUTH [u] p                  authenticate (auth.go); without users
//	                            configured, an error as on Redis
//	SELECT 0                    +OK; any other index is out of range
//	QUIT                        +OK, then the connection is closed
//	CLIENT ID|GETNAME|SETNAME n|SETINFO LIB-NAME|LIB-VER v|INFO|LIST|HELP
//	COMMAND [COUNT|LIST|INFO names|DOCS|HELP]
//	                            Redis 7 entry layout; arity -(minArgs+1);
//	                            DOCS returns an empty map
//	INFO [section ...]          Server, Clients, Memory, Stats,
//	                            Commandstats, Latencystats (not by default,
//	                            as in Redis), sections added with
//	                            AddInfoSection (RegisterMem adds
//	                            Persistence, Keyspace, memrl)
//	CONFIG GET pattern ...      read-only: appendonly, bind, databases,
//	                            maxclients, port, proto-max-bulk-len, save,
//	                            slowlog-*, timeout, and AddConfigParams'
//	SLOWLOG GET [n]|LEN|RESET|HELP
//	                            commands slower than a threshold
//	                            (SetSlowlog), in Redis's format; AUTH
//	                            arguments are redacted
//	MULTI, EXEC, DISCARD        transactions (below)
//	WATCH key ...               an error: there are no keys to watch
//	UNWATCH                     +OK
//	RESET                       discards the transaction, clears the name,
//	                            ends READONLY, requires AUTH again (with
//	                            users); +RESET
//	ROLE, READONLY, READWRITE, ASKING, CLUSTER SLOTS|SHARDS|NODES|MYID|
//	MYSHARDID|INFO|KEYSLOT|COUNTKEYSINSLOT|GETKEYSINSLOT|RELOAD|HELP
//	                            cluster mode (below); standalone they
//	                            answer "ERR This instance has cluster
//	                            support disabled", but ROLE says master
//
// COMMAND's entries give every command a "readonly" or "write" flag and
// the key positions cluster clients hash: the collection name (1 1 1) for
// every MEM.* command but MEM.LIST and MEM.CHECKPOINT (route.go).
//
// # Cluster mode
//
// With a Router set (SetRouter; in cluster mode a ClusterRouter built on a
// cluster.State), every command is shown to it before it runs, and as it
// is queued inside MULTI, and it answers where the command is served: here,
// or "-MOVED slot host:port", "-CLUSTERDOWN ..." (written without ERR, as
// Redis does). At EXEC the queued commands are checked again together
// (keys in two slots: -CROSSSLOT), and a refusal discards the
// transaction. READONLY lets a connection's reads be served by a follower.
// route.go and commands_cluster.go hold it; docs/CLUSTER.md is the design.
//
// # Transactions
//
// After MULTI every command but EXEC, DISCARD, MULTI, WATCH, QUIT and RESET
// is checked as if it ran (known, allowed, enough arguments, within
// Config.MaxQueuedCommands and the memory budget), copied and answered
// +QUEUED. A refused command gets its error and makes EXEC answer
// "-EXECABORT Transaction discarded because of previous errors." without
// running anything. EXEC runs the queue while holding a server-wide lock
// exclusively that every other command holds shared while it runs, so no
// command interleaves with a transaction; a run-time error is that
// command's element of EXEC's array and the others run (no rollback). The
// transaction's writes share one durability wait before EXEC's reply is
// sent (Ctx.AfterDurable). A closed connection, QUIT, RESET or DISCARD
// runs none of the queued commands. Queued commands are counted
// (commandstats, SLOWLOG) when EXEC runs them; EXEC is never slow-logged.
// See tx.go for the design, including why a command lets go of the lock
// while it waits for the socket or an fsync (handlers must not hold an
// engine lock across a reply write or AfterDurable), and docs/PROTOCOL.md
// for the reply texts and the WATCH-free semantics.
//
// # Replication
//
// With a Replicator set (SetReplicator, replicate.go), a command that
// changes data (not ReadOnly, not Local) is not run by the connection: it
// is proposed, and the reply its application produced on the shard's
// leader is written back. A transaction holding such a command is proposed
// as one entry (EncodeExec). Apply runs a committed command or EXEC entry
// on a connection without a socket, on every replica. A Replicator that is
// also a ReadGate approves reads of memory data before they run here.
//
// # Exposure
//
// Users (Config.Users) with passwords, read-only users, a tighter frame
// limit before authentication (auth.go); protected mode, which refuses a
// listener beyond loopback on a server without users (protected.go); TLS
// (tls.go); frame, idle, auth and output timeouts (timeouts.go); a memory
// budget shared by all clients' buffers (budget.go); and the closing of
// connections that speak HTTP (http_probe.go).
//
// # Observability
//
// Every command that reaches its handler is timed (from the start of its
// execution to its handler's return) into a per-command lock-free
// histogram, and its failures (an error reply) and rejections (too few
// arguments) are counted; see stats.go for what the time includes and what
// it costs. INFO commandstats and latencystats, SLOWLOG, and the
// Prometheus metrics of MetricsHandler (with optional net/http/pprof on
// the handler's own mux) all read those counters. MetricsHandler has no
// authentication; serve it on loopback only.
package server
