// Package replica replicates a memrl shard with hashicorp/raft: a shard is
// a raft group of (typically three) memrl serve processes, and the engine
// is the raft state machine (docs/CLUSTER.md "Replication").
//
// # Entries
//
// A raft log entry is one command as a client sent it (its name and
// arguments, or a whole MULTI/EXEC transaction, server.EncodeExec) plus the
// leader's wall-clock time when it proposed it (Entry, versioned and
// checksummed: entry.go). The server does not run a write itself when a
// Node is its Replicator (server.SetReplicator): it proposes the command
// (Node.Replicate), and when raft has committed it (appended and fsynced
// by a majority's raft-boltdb stores) and the leader has applied it, the
// reply the leader's application produced is the client's reply. Every
// replica applies every committed entry, in log order, through the same
// command handlers (server.Server.Apply) with the engine's clock
// (engine.Options.Now) set to the entry's time: created and updated
// stamps, expiries and ids come out identical, and a command that fails
// validation fails the same way everywhere (same state, same error), so
// the replicas stay identical without any replica-specific logic.
//
// # State and recovery
//
// The raft log and stable store are raft-boltdb (DIR/raft/raft.db), not
// memrl's WAL: the WAL logs the results of commands (not the commands),
// its positions are its own, and it is truncated by engine checkpoints,
// whereas raft needs to keep, truncate and replay its log by raft index
// around its own snapshots. The engine (DIR/fsm/gen-N) is rebuilt at every
// start: Open wipes DIR/fsm, opens an empty engine, and raft restores its
// latest snapshot into it and applies the committed log after it. The
// engine may therefore run without fsyncs of its own (wal.SyncNone):
// what is acknowledged is in a majority of raft logs.
//
// # Snapshots
//
// A raft snapshot is a full engine checkpoint and the collection files it
// refers to, streamed as files in a framed, checksummed format
// (snapshot.go): taken on the FSM goroutine (no command applying), the
// files are opened at once and streamed later up to their sizes then,
// while commands keep applying. Restore reads a stream into a fresh
// folder, verifies every checksum, opens an engine there and swaps it in
// for the old one (the server reaches the engine through Node.DB,
// server.Server.RegisterMemFunc); a damaged stream is refused and changes
// nothing. IVF-PQ index files are shipped like the others (replaced only
// by rename, so a pinned one is whole); the restored engine opens them and
// re-adds the rows after them from the vector file, as after a crash.
//
// # Reads
//
// A leader serves reads linearizably: after it takes over it applies a
// Barrier (every entry of earlier terms applied) and before each read of
// memory data it confirms it still leads (VerifyLeader). A follower
// serves reads as they are (possibly stale): a router sends it reads only
// for READONLY connections. But it answers LOADING until its engine has
// again applied what the node had applied before it started, and TRYAGAIN
// while it knows no leader or has not heard from it within
// Config.StaleReadBound (readgate.go). Writes sent to a follower are
// refused with TRYAGAIN, naming the leader.
//
// # Shutdown
//
// A leader about to stop hands its leadership over first
// (Node.TransferLeadership). Node.Close closes every raft connection of the
// node's own transport, so that no raft goroutine stays blocked on a peer
// that reads nothing, and gives up after Config.ShutdownTimeout
// (transport_closing.go).
//
// # Maintenance
//
// The engines run no expiry sweeper and no prune-policy pruner of their
// own; the leader proposes RAFT.MAINTAIN every Config.MaintainInterval,
// which every replica applies at the entry's time (maintain.go).
// Compaction, index builds and checkpoints are physical and stay local
// (MEM.COMPACT and MEM.CHECKPOINT are server.Local commands).
//
// # Membership
//
// Every node of a shard bootstraps the group with the same voters
// (Config.Peers) the first time it starts; a node with raft state never
// bootstraps again. RAFT.ADD and RAFT.REMOVE change the voters at run
// time on the leader (a node started with no Peers waits to be added;
// RAFT.ADD first checks that it answers RAFT.STATUS with the id given, as
// a voter counts towards the quorum at once, and RAFT.REMOVE refuses a
// non-member);
// RAFT.STATUS reports a node's raft state; RAFT.SNAPSHOT [KEEP n] takes a
// snapshot and compacts the log behind it. These wait for raft without
// the server's transaction lock (server.Ctx.WithoutTxLock): raft's FSM
// goroutine may be applying a transaction, which takes it exclusively.
package replica
