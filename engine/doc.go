// Package engine is memrl's storage engine: a database of named collections
// of memories, with two-phase retrieval, temporal-difference rewards, a
// write-ahead log, checkpoints and recovery. It ties the other packages
// together: wal for durability, qtable for utilities, simd for the scan
// kernels, and (for large collections) ivfpq for phase 1.
//
// # Model
//
// A memory is a uint64 id, an intent embedding (a float32 vector of the
// collection's dimension), an opaque payload, and a learned utility Q with
// its visit count and reward statistics. A retrieval is two phases:
//
//  1. semantic recall: the K1 live memories most similar to the query whose
//     similarity is at least DELTA (cosine, dot product, or minus squared L2);
//  2. value-aware selection: score = (1-λ)·z(sim) + λ·clip(z(Q), ±3), z-scores
//     over the K1 candidates (0 when the pool's standard deviation is 0); the
//     best K2 are returned, best first.
//
// A reward r applied to memories sets Q ← Q + α(r + γ·nextQ − Q) for each,
// atomically per memory.
//
// # Files
//
//	dir/LOCK                        flock: one process per database
//	dir/CHECKPOINT                  full checkpoint: state as of a WAL position (checkpoint_format.go)
//	dir/CHECKPOINT.<n>              delta checkpoints of its chain (checkpoint_chain.go)
//	dir/wal/                        the write-ahead log (package wal)
//	dir/collections/<uid>/vectors.f32   row-major float32 vectors, read through mmap
//	dir/collections/<uid>/payloads.dat  payload bytes, appended
//	dir/collections/<uid>/ivfpq/        the IVF-PQ index once trained (index.go)
//
// A collection's folder is named by its uid (a counter never reused), so a
// collection dropped and created again under the same name never meets its
// predecessor's files.
//
// Collections hold no descriptors of their own. Their files are opened when
// an operation needs them (a write, a payload read, a checkpoint's sync)
// through a cache that keeps at most Options.MaxOpenFiles of them open,
// closing the least recently used (filecache.go); vectors are read through
// a mapping, which needs no descriptor once made. A command that cannot
// open a file for want of descriptors fails with ErrTooManyOpenFiles and
// changes nothing; the log is untouched. Create refuses more than
// Options.MaxCollections collections (ErrTooManyCollections).
//
// # Durability
//
// Every change is a WAL record (record.go) logged before the change is
// acknowledged; with wal.SyncAlways, a method's return means the record is
// fsynced, and concurrent writers share fsyncs (group commit). A change is
// logged (Enqueue) and applied in memory under the same lock, then the
// method waits for durability without the lock, so the log order equals
// the order changes were applied in, and the durable log is always a prefix
// of that order. The vector and payload files are derived data: a
// checkpoint fsyncs them before it records their sizes, and replay rewrites
// whatever lies past those sizes from the log.
//
// # Concurrency
//
// Lock order: DB.ckptMu, then DB.mu, then Collection.mu, then a qtable
// stripe, then the WAL's own lock. Rewards take Collection.mu for reading
// and one stripe at a time, so rewards on different memories run in
// parallel; adds and deletes take Collection.mu for writing.
package engine
