// Package maintain is `memrl bench maintain`: the "Measured" section of
// issue 10 (memory that stays healthy), through the protocol with the Go
// client (client/).
//
// It starts `memrl serve` (this executable unless --bin) on a free loopback
// port with a fresh data folder, as `memrl bench serverann` does, creates
// a collection (MEM.CREATE coll DIM d METRIC L2, plus --create), adds the
// first --n base vectors (MEM.MADD, base row r is memory id r+1), spreads
// their Q by rewarding a --reward-share of them (MEM.REWARD with rewards
// drawn from -1 to 1), waits for the index builds the fill started, and
// then measures, in order:
//
//   - before: disk use (the data folder's allocated blocks, as du counts
//     them, after a MEM.CHECKPOINT so that the log holds little), retrieval QPS (one client, one pass over the queries; and
//     --clients clients for --duration) and recall@10 (MEM.RETRIEVE coll
//     FP32 q K1 10 K2 10 LAMBDA 0 against the exact 10 nearest of the live
//     memories, computed here by brute force over the live vectors; the
//     live ids are read back with MEM.SCAN);
//   - MEM.SNAPSHOT coll before-prune, timed;
//   - MEM.PRUNE coll MAXCOUNT n/2, timed, then the same measures;
//   - writers: one MEM.ADD client and one MEM.REWARD client, each one
//     command at a time, for --writers-idle with nothing else running (their
//     p50/p99 idle), then during MEM.COMPACT coll WAIT (timed, with the
//     server's own summary), then the same measures after compaction;
//   - MEM.ROLLBACK coll before-prune, timed, then the count (it must be n
//     again: the pruned memories back, the writers' adds gone) and the same
//     measures;
//   - with no snapshot left: MEM.PRUNE coll MAXCOUNT n/2 again and
//     MEM.COMPACT coll WAIT with the writers running. This compaction frees
//     the pruned rows, so the writers' latencies "during MEM.COMPACT WAIT"
//     are taken over it: the first one, with the snapshot pinning every
//     pruned row, frees nothing and returns at once.
//
// MEM.COMPACT and MEM.SNAPSHOT/ROLLBACK may not exist in the server run
// (they were built at the same time as this program): a step the server
// answers "ERR unknown command" is printed as "not available: <error>" and
// the steps that depend on it are skipped, so the program runs either way.
// The output is one Markdown table, ready for bench/README.md.
//
//	memrl bench maintain [--base F] [--query F] [--n N] [--nq N]
//	    [--reward-share S] [--clients C] [--duration D] [--writers-idle D]
//	    [--sync none|interval|always] [--create ARGS] [--dir DIR] [--bin memrl]
//	    [--json FILE]
package maintain
