// Package engine is memrl's storage engine: a database of named collections
// of memories, with two-phase retrieval, temporal-difference rewards, a
// write-ahead log, checkpoints and recovery. It ties the other packages
// together: wal for durability, qtable for utilities, simd for the scan
// kernels, and (for large collections) ivfpq for phase 1. Every file it
// touches, the IVF-PQ index and the database's LOCK included, goes through
// the vfs.FS of Options.FS, so crash tests over vfs.MemFS cover them all.
//
// # Model
//
// A memory is a uint64 id, an intent embedding (a float32 vector of the
// collection's dimension), an opaque payload, and a learned utility Q with
// its visit count and reward statistics. It may also carry (attrs.go):
//
//   - attributes: a JSON object (at most MaxAttrs bytes, stored compact),
//     held in memory with the memory for front ends to filter on;
//     replaced whole by SetAttrs;
//   - a key: an external name of 1 to MaxKeyLen bytes, unique in the
//     collection, by which every method can name the memory instead of its
//     id (a Ref); indexed by a 64-bit fingerprint, with collisions
//     between different keys refused (keys.go);
//   - an expiry: an absolute time after which the memory is gone to every
//     reader, and which a background sweeper turns into an ordinary,
//     logged delete (expiry.go).
//
// The payload can be replaced in place (SetPayload). A retrieval is two phases:
//
//  1. semantic recall: the K1 live memories most similar to the query whose
//     similarity is at least DELTA (cosine, dot product, or minus squared L2);
//  2. value-aware selection: score = (1-λ)·z(sim) + λ·clip(z(Q), ±3), z-scores
//     over the K1 candidates (0 when the pool's standard deviation is 0); the
//     best K2 are returned, best first. RetrieveOptions.RawQ replaces
//     clip(z(Q), ±3) with clip(Q, ±3) (Q as learned, not z-scored), the
//     ablation of z-normalisation that bench/loop measures.
//
// A reward r applied to memories sets Q ← Q + α(r + γ·nextQ − Q) for each,
// atomically per memory. Each memory keeps its latest Options.HistoryLen
// updates (time, reward, Q after, visits) for Collection.History
// (history.go): derived from the logged rewards, persisted in checkpoints,
// removed with the memory, nothing kept for a memory never rewarded.
//
// # Filtered search
//
// RetrieveOptions.Filter (a filter.Expr over the memories' attributes)
// becomes phase 1's Allow and Match (Collection.phase1OptionsLocked): the
// collection's indexed fields (filter_index.go: Config.Indexed and
// IndexField, their roaring bitmaps by row kept in step with adds,
// attribute changes and deletes, rebuilt at open) narrow the expression to
// the rows that can match (filter.Index.Plan); Match evaluates it on the
// attributes of the candidates the plan does not decide, and leaves out
// expired memories not yet swept. CountFilter, DeleteFilter and Scan with
// ScanOptions.Filter use the same plan (filter_ops.go), as does Prune
// (prune.go: deletes by Q and visits, age, disuse and a cap on the count,
// logged as ordinary delete records; docs/PROTOCOL.md "Maintenance").
// A collection may carry a prune policy (SetPrunePolicy, prune_policy.go),
// which a pruner goroutine of the DB applies every PrunePolicy.Every as the
// same prune; the policy and each run are logged (record type 17) and
// checkpointed (collection section 3).
// Creation and reward (Updated) times come from Options.Now, as expiry's do.
// Options.ExactWrites makes a deduplicated add search exactly (dedup.go),
// so that replicas (package replica) choose the same memory whatever their
// indexes.
//
// SearchOptions.Allow (a bitmap of rows, from the caller's attribute
// index) and SearchOptions.Match (a residual check on a row, for fields
// without an index) narrow phase 1: it returns the K1 most similar live
// rows that are allowed, match and pass DELTA, never fewer because the
// filter was applied after a global top K1; fewer only when the collection
// holds no more such rows. Dead rows and Match are checked only for rows
// good enough to enter the candidate heap.
//
// Paths (filter_search.go):
//
//   - Flat collection, or IVF-PQ before its index is built: an exact scan.
//     With Allow it iterates the bitmap, scoring only allowed rows one by
//     one, when |Allow|·exactNsPerDim <= rows·scanNsPerDim (the batched
//     full scan's cost per row); otherwise it scans every row in batches
//     and checks Allow like a tombstone. With Match it scans on until
//     every row is seen, so it finds all that match.
//   - IVF-PQ with Allow: the exact scan over the allowed rows when its
//     estimated cost, |Allow|·dim·exactNsPerDim, is at most the index's:
//     NList·dim·scanNsPerDim for the coarse step, plus the probed
//     lists' codes (L lists of rows/NList codes, codeNsPerByte per code
//     byte), plus re-ranking min(K1·REFINE, allowed codes seen) rows. L is
//     the filtered NPROBE, nprobe/√s for an allowed share s (the true top
//     K1 of a share s are about the top K1/s overall, which lie in more
//     lists; unscaled, recall@10 fell to 0.87 at 2% on 100k SIFT), or
//     more if those lists are expected to hold fewer than K1 allowed rows.
//     Otherwise the index, probing the filtered NPROBE lists first, with
//     Allow, the tombstones and Match checked per list entry entering the
//     heap (ivfpq.SearchFiltered).
//   - IVF-PQ without Allow (with or without Match, or no filter at all):
//     the index. A FILTER that no indexed field narrows (phase1OptionsLocked)
//     first estimates the share s of memories it matches on up to 1,024
//     rows spread over the collection (estimateShareLocked, about a
//     millisecond) and probes the filtered NPROBE for that share, as for an
//     allowed set: unscaled, recall@10 of a tenant filter on an unindexed
//     field was 0.84-0.94 for tenants of 0.1-5% at 1M (bench filter
//     --attrs), and 0.925 at 20% on 20k SIFT
//     (TestUnindexedFilterRecallOnSIFT).
//
// SearchOptions.Path forces the exact or the index path (benchmarks and
// tests compare them on one collection); an IVF-PQ collection without a
// built index always scans exactly.
//
// The constants (filter_search.go) are nanoseconds per unit; only their
// ratios matter. They come from sift1m-deb (1M × 128, IVF4096,PQ32x8,
// NPROBE 64, K1 10) with `memrl bench filter --crossover` (50 queries per
// share; the 2-core machine was shared, load 12–15, so times are several
// times an idle machine's and noisy, but both paths ran under the same
// load): the exact path over the allowed rows took 9.5 ms at 1% allowed,
// 26.5 ms at 2%, 79 ms at 5%, 90 ms at 10%; the index path 26, 27, 36 and
// 6 ms. A quieter run: exact 0.96, 2.4, 11.2, 17.2 ms; index 3.3, 2.6,
// 3.1, 1.5 ms; the batched full scan of 1M rows 58 ms (0.45 ns a
// dimension; scoring allowed rows one by one, 0.75–1.7 ns; a probed code
// byte, 0.66–1.4 ns). The crossover lies between 2% and 5% of the rows
// (20k–50k rows); the rule puts it at about 2.2% at this shape, and scales with NList,
// NPROBE, M and dim. The index path's recall@10 against the exact path was
// at least 0.986 at every share from 0.05% to 20% (NPROBE scaled by
// 1/√s), so the choice is one of cost, not recall. Below about 1% the
// index path is far slower (132 ms at 0.05%: scaling NPROBE probes most
// lists), which is why small sets must go exact.
//
// Widening (ivfpq.SearchFiltered): when the probed lists leave the
// candidate heap short of K1·REFINE rows that pass, or once it is full its
// re-ranked rows hold fewer than K1 that pass DELTA, the index probes
// further lists in centroid order, doubling the lists probed each round,
// until neither holds or every list has been probed. This serves unfiltered
// retrievals too: a K1 above what the default probes' lists hold is
// filled. The bound: at most one pass over every code of the index and
// 1 + ⌈log2(NList/NProbe)⌉ re-ranks of K1·REFINE rows. With DELTA there
// is no earlier stop: the index keeps no list radii, so no list can be
// ruled out by its centroid, and a DELTA that fewer than K1 rows pass
// probes every list: on sift1m-deb (1M, IVF4096,PQ32x8) a DELTA that no
// memory passes took 13.7–43.8 ms a query, and K1 10000 (widened until
// 80,000 candidates, then one re-rank of them) 45.7–119 ms, in two runs
// on the loaded machine where a default unfiltered retrieval took 0.7–1.2
// ms (`memrl bench filter`, bench/README.md).
//
// # Files
//
//	dir/LOCK                        flock: one process per database
//	dir/CHECKPOINT                  full checkpoint: state as of a WAL position (package ckptfile)
//	dir/CHECKPOINT.<n>              delta checkpoints of its chain (checkpoint_chain.go)
//	dir/wal/                        the write-ahead log (package wal)
//	dir/collections/<uid>/vectors.f32   row-major float32 vectors, copied into memory at open (Options.MapFiles: mapped)
//	dir/collections/<uid>/vectors.sum   format header and a checksum per vector row (package sumfile)
//	dir/collections/<uid>/payloads.dat  payload records: bytes, then their checksum (payloads.go);
//	                                    append-only: SetPayload appends the new record, and the
//	                                    old one stays as garbage until compaction
//	dir/collections/<uid>/ivfpq/        the IVF-PQ index once trained (index.go)
//	dir/collections/<uid>/snapshots/    snapshot files: every memory's state at a named point (package snapfile)
//
// After a compaction the four carry its generation g (compact_files.go):
// vectors.<g>.f32, vectors.<g>.sum, payloads.<g>.dat and ivfpq.<g>/, and
// the checkpoint records g (its collection section, tag 2).
//
// A collection's folder is named by its uid (a counter never reused), so a
// collection dropped and created again under the same name never meets its
// predecessor's files. DumpWAL, DumpCheckpoint and DumpVectors (inspect.go)
// print these files read-only, with the decoders recovery uses (memrl dump).
//
// # Checksums
//
// Every vector row has a checksum (xxhash64, mixed with the row number),
// kept in memory and in vectors.sum; every payload is followed by one
// (xxhash64 of the memory's id, the payload's offset and its bytes).
// What is verified when:
//
//   - Open, after replay: everything (Collection.Verify): every row against
//     its checksum, vectors.sum against the copy in memory, every live
//     payload (records next to each other in the file are read a chunk at
//     a time), and the IVF-PQ index: its header and directory (ivfpq.Open)
//     and its lists (index_damage.go: a damaged index is rebuilt, and the
//     searches that meet the damage meanwhile score its rows exactly).
//     Damage is logged, and damaged rows are left out of searches (as
//     tombstones are); Get keeps reporting them. A damaged vectors.sum
//     header stops Open (ErrCorrupt): without it the payloads cannot be
//     read. (Removing the file makes Open treat the collection as one
//     from before checksums, below.)
//   - Get: the memory's row and payload.
//   - Retrieve: the rows of the K1 phase-1 candidates, once phase 1 is
//     done, and the payloads returned. Phase 1 itself (the exact scan and
//     the index's exact re-ranking) reads rows from memory unchecked:
//     a checksum per row scanned would make the scan 3-4 times slower. So
//     a damaged row is never returned nor ranked (a damaged candidate is
//     left out and logged, and the retrieval goes on), but one damaged
//     into looking dissimilar drops out of results unnoticed until Verify.
//   - Verify (MEM.VERIFY): everything, as at Open, plus the index's lists;
//     resident rows both as held and as read back from the vector file
//     (damage to the file while open is served from the intact copy until
//     the next Open, which leaves the row out).
//
// A read that meets damage fails with an error wrapping ErrCorrupt that
// names the memory, and is logged; damaged data is never returned.
// Collections written before checksums existed have no vectors.sum: Open
// sums their rows as found, writes the file, and records there where the
// old payloads end; those payloads (only) stay unchecked. A torn tail
// past a checkpoint's sizes, in any of the three files, is rewritten by
// replay with fresh checksums, as before.
//
// Collections hold no descriptors of their own. Their files are opened when
// an operation needs them (a write, a payload read, a checkpoint's sync)
// through a cache that keeps at most Options.MaxOpenFiles of them open,
// closing the least recently used (filecache.go); vectors are read from a
// copy in memory or through a mapping, neither of which needs a descriptor
// once made. A command that cannot
// open a file for want of descriptors fails with ErrTooManyOpenFiles and
// changes nothing; the log is untouched. Create refuses more than
// Options.MaxCollections collections (ErrTooManyCollections).
//
// # Durability
//
// Every change is a WAL record (bodies in package record) logged before
// the change is acknowledged; with wal.SyncAlways, a method's return means the record is
// fsynced, and concurrent writers share fsyncs (group commit). A change is
// logged (Enqueue) and applied in memory under the same lock, then the
// method waits for durability without the lock, so the log order equals
// the order changes were applied in, and the durable log is always a prefix
// of that order. A batch of adds (AddBatch, batch_add.go) is validated
// whole first, then logged with one wal.Log.EnqueueBatch and applied under
// one hold of the lock: all or nothing, and one fsync. The vector and
// payload files are derived data: a
// checkpoint fsyncs them before it records their sizes, and replay rewrites
// whatever lies past those sizes from the log.
//
// # Snapshots and rollback
//
// A snapshot (snapshot.go) is a file of every live memory's state (no
// vectors, no rows: compaction moves rows) written atomically after its log
// record, and an entry of the collection's catalog; the catalog and the
// ghosts (memories deleted while a snapshot holds them, kept with their
// row and payload, invisible to every reader; compaction keeps them through
// forEachPinnedLocked) are checkpoint section sectSnapshots. A snapshot's
// state is copied under the collection's write lock, in the hold that logs
// it, so every later delete sees it and pins what it holds; the file is
// written after the lock is released. A missing file at open means a crash
// came between record and file (never acknowledged): the entry is dropped.
// A damaged file marks the snapshot unusable (listed, refused by rollback,
// pinning nothing, deletable) rather than stopping Open: the rest of the
// database is sound, and refusing to open would make one bad file take
// every collection down.
//
// A rollback (rollback.go) is logged as its results, not as "roll back to
// S": a batch of changes per ~1 MiB (deletes; restores of Q, counters,
// attributes, key, expiry; revivals carrying the ghost's whole record),
// then a commit record, all in one wal.Log.EnqueueBatch under the
// collection's write lock, applied in the same hold. Replay keeps a
// rollback's batches aside until its commit, so a log torn inside it
// applies none of it; and as results, it converges over a fuzzy checkpoint
// like every other record and needs no snapshot file (DELSNAPSHOT removes
// the file at once). Taking a checkpoint as part of the rollback was the
// alternative: it writes every collection, holds ckptMu, and a failed
// sync there would stop checkpoints.
//
// # Compaction
//
// Deleted rows stay in the vector file (marked dead), and replaced or
// deleted payloads in the payload file, until a compaction
// (compact.go) rewrites the collection as a new generation of files holding
// only the rows of live memories and those forEachPinnedLocked reports
// (deleted memories a snapshot still needs), renumbered from 0 in row
// order, with their payloads, and swaps it in. (Attributes, keys and
// expiries have no file of their own: they live in the checkpoint and the
// log, which the compaction's full checkpoint rewrites without the deleted
// memories.) MEM.COMPACT starts one; the
// DB's trigger (compact_trigger.go) starts one when the rows a compaction
// would reclaim (dead rows less those snapshots pin, counted afresh each
// time, so a restart does not forget them) reach Options.CompactShare of
// the rows (default 30%, and at least Options.CompactMinRows, default
// 10,000). At most one runs per
// collection (ErrCompacting). The steps:
//
//  1. Create the files of generation g+1 (after removing any leftover of
//     an earlier attempt at g+1) and sync the folder.
//  2. Copy, a chunk of rows at a time under the read lock (paced like a
//     checkpoint's copy, so adds, rewards, deletes and retrievals go on),
//     the live rows below the row count read at the start, and the dead
//     rows snapshots pin (named at the start, each checked to be still
//     pinned when its chunk is read): each vector and payload is verified
//     as it is read, and damage stops the compaction (it is never copied
//     forward). Then fsync the new files, without any lock, and remap the
//     IVF-PQ index to the rows kept (ivfpq.Index.Remap: codes copied, not
//     re-encoded; it holds the index's lock one list at a time, so adds
//     go on).
//  3. Take the transaction groups' lock (exclusively: no group is open),
//     DB.ckptMu and the collection's writeGate (its writers now wait
//     there, not on its lock, so they hold up no reader), then its read
//     lock. Under the read lock (readers and rewards go on; no writer can
//     change anything), copy the rows added since step 2's snapshot, the
//     payloads replaced since their row was copied, and the rows pinned
//     since; fsync that tail; add the rows copied here to the remapped
//     index (remapping it whole now if a build replaced the index since
//     step 2); build a new map of the memories at their new rows and
//     payload offsets, the row map and the dead rows (prepareSwapLocked;
//     it fails if a live memory was not copied); and write the row map
//     file remap.<g+1>.map, synced (remap.go). Rows copied in step 2
//     whose memory was deleted (or unpinned) since are kept but dead in
//     the new files (the next compaction drops them). Then, under the
//     write lock, swap those in, with the new files, move the pinned
//     ghosts and rebuild the attribute index (commitSwapLocked), and log
//     the remap marker (recRemap, remap.go): the only time readers wait
//     (CompactStats.Stall). Every record of the collection logged before
//     the marker refers to generation g's rows and offsets, every one
//     after it to g+1's. Writers waited from the start of this step
//     until here (CompactStats.WriteStall); writeGate is released. An
//     index build running meanwhile is discarded and started again,
//     since its rows moved.
//  4. Still holding ckptMu and the groups' lock (no other checkpoint, no
//     drop, no transaction meanwhile), write a full checkpoint like any
//     other (fuzzy: writers and readers go on; its log position follows
//     the marker), whose collection section records generation g+1.
//  5. Once it is committed, remove generation g's files and index folder,
//     paced, and g+1's row map. If it failed, they stay (the disk's
//     checkpoint may name g; the new generation stays in use, and the
//     next checkpoint is full). The remapped index is saved to
//     ivfpq.<g+1>/ in the background, like a new build's: a crash before
//     that save finds no index of g+1 at open and builds one again (it is
//     derived data).
//
// Crash cases (TestCrashDuringCompaction crashes at every file operation
// of a compaction; TestCrashDuringCompactionCommit at every one from the
// checkpoint of step 4 on, with writes acknowledged during it;
// TestRemapMarkerRecovery): before the marker is durable, the disk's
// checkpoint names generation g, whose files are untouched, and the log
// after it refers to g's rows; the files of g+1 are leftovers, removed at
// open (removeStaleGensLocked). With the marker durable (so were g+1's
// files and row map, synced before it was logged) but not step 4's
// checkpoint, replay applies the log to g up to the marker, then switches
// the collection to g+1 as the swap did (replayRemapLocked: the state
// replayed to that point is the one the swap saw) and replays the rest
// against g+1; Open then takes a full checkpoint, and only once it is
// committed removes g's files (a second crash before it replays the
// marker again). After step 4's commit, the checkpoint names g+1 and the
// marker precedes its position; g's files and g+1's row map are leftovers.
// A damaged row map whose marker is durable is refused (ErrCorrupt).
// Rows are never renumbered outside a compaction, so a checkpoint chain's
// bounds check (files only grow) holds within each chain: a compaction
// always starts a new chain.
//
// # Export and import
//
// A collection moves whole between databases (cluster resharding) as an
// image: Collection.BeginExport takes a consistent cut (its write lock
// held only to copy the in-memory state: memory records, Q entries and
// history logs, each copied sequentially, and to open the files, which
// only grow below the sizes noted; the file generation is pinned so that a
// compaction's removal of it waits for Export.Close), Export.WriteTo
// streams it without the lock (package engine/image frames and checksums
// it, and specifies its files and the meta file), and DB.ImportCollection
// verifies it whole while writing it into a new folder marked IMPORTING,
// then logs recImport (record 24) naming that folder and its state file
// import.ckpt, a one-collection checkpoint. Replay opens the collection
// from them; the first checkpoint after the record holds it (its memories
// are imported dirty) and removes import.ckpt; Open removes a marked
// folder no collection owns. Rows keep their numbers (dead rows are
// shipped), so payload offsets, ghosts and the shipped IVF-PQ index stay
// valid; history logs restart at LSN 0 in the new log. The state is the
// image's alone (no clock, nothing local but the uid), so replicas that
// import the same bytes end in the same state.
//
// # Concurrency
//
// Lock order: DB.ckptMu, then DB.mu, then Collection.snapMu (snapshot
// commands, which write and read snapshot files without Collection.mu),
// then Collection.mu, then a qtable stripe, then a history stripe
// (history.go), then the WAL's own lock. (A compaction's swap holds
// DB.ckptMu, Collection.writeGate and Collection.mu, and its checkpoint
// DB.ckptMu and DB.mu; see "Compaction".) Collection.writeGate stands apart: writers pass it for
// reading in lockWriter (through lockLive, under snapMu for snapshot
// commands; and the end of an index build or save) and release it once
// they hold Collection.mu; a compaction's swap holds it for
// writing, taken after DB.ckptMu and before DB.mu, and never waits for
// snapMu while it does. Rewards take Collection.mu for reading
// and one stripe at a time, so rewards on different memories run in
// parallel; adds, deletes and in-place updates (attributes, payload, vector,
// expiry) take Collection.mu for writing, and so do the expiry sweeper
// (a goroutine of the DB, like the checkpointer) when it deletes and the
// pruner (prune_policy.go) while it applies a due policy. A scan
// page (scan.go) is read under one hold of Collection.mu for reading,
// walking the live ids in id order.
package engine
