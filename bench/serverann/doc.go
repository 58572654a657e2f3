// Package serverann is `memrl bench serverann`: phase 1 through the server,
// on a collection filled over the protocol (issue 13).
//
// It starts `memrl serve` (this executable unless --bin) on a free loopback
// port with a fresh data folder, creates a collection with the default
// index settings (MEM.CREATE coll DIM d METRIC L2, plus --create), and adds
// every base vector as MEM.ADD coll FP32 blob ID row, pipelined over
// several connections, reporting the fill rate. Row r of the base set is
// memory id r, so the ground truth's rows are the ids to find.
//
// Then it measures MEM.RETRIEVE coll FP32 q K1 10 K2 10 LAMBDA 0 (the
// index's default NPROBE and REFINE; LAMBDA 0 keeps phase 1's order) with
// one client (one pass over the queries, one at a time) and with --clients
// clients (each one query at a time on its own connection, for
// --duration): recall@10 against the ground truth, QPS, p50/p99/max
// latency as the client sees it, and the server process's CPU time per
// query (/proc/PID/stat). It does so
//
//   - during a retrain: the fill crosses the collection's retrain sizes
//     (4× the last training size), and the retrain due last is usually
//     still running when the fill ends. INFO keyspace (index=ivfpq+building)
//     is polled every --poll; a query counts only if the retrain ran at its
//     start and end, and the rows end when the retrain does. If no build
//     runs when the fill ends, there are no such rows (it says so);
//   - idle, once the retrain has finished;
//   - after a clean restart (SIGINT, start again on the same folder): the
//     time from the start to listening and to the first answer, MEM.INFO's
//     index before and after (trained=N: the size it was trained on) and the
//     builds the server logged since the restart, which must be none;
//   - in process: the same folder opened with engine.Open (the same saved
//     index) and the same queries through engine.Collection.Retrieve with
//     the same options, one goroutine and one per processor, with this
//     process's CPU time per query. The last line is the server's QPS over
//     the in-process QPS at one goroutine per processor, and the same per core:
//     in-process CPU per query over the server's.
//
// The client shares the machine with the server: on a 2-core machine it
// takes part of the CPU the server's QPS would use, which is why the per
// core figure (server CPU only) is given beside the plain QPS ratio.
//
//	memrl bench serverann --base F --query F --gt F [--nbase N] [--nq N]
//	    [--clients C] [--duration D] [--fill-conns N] [--pipeline P]
//	    [--sync none|interval|always] [--server-gomaxprocs N] [--create ARGS]
//	    [--dir DIR] [--bin memrl] [--json FILE] [--skip-inprocess]
package serverann
