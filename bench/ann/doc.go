// Package ann is the approximate-nearest-neighbour benchmark behind
// `memrl bench ann`: it builds an ivfpq index over a TEXMEX data set (or
// synthetic data), saves and reopens it (timing the open and first query),
// then sweeps nprobe × refine single-threaded, one query per call (or,
// with --batch B, the query set in batches of B through ivfpq.SearchBatch
// on --threads workers), and reports recall@1, recall@10 (share of the true top 10 in the returned
// 10), QPS, mean/p50/p99 latency, build time, index bytes and resident
// memory.
//
// Interface (stable; other tools drive it):
//
//	memrl bench ann --base F --query F --gt F [--learn F] [--nlist N]
//	    [--pqm M] [--pqbits 4|8] [--nprobe 1,4,16,…] [--refine 1,4,…]
//	    [--k 10] [--json FILE] [--out-ids PREFIX]
//	    [--metric l2|ip] [--nq N] [--nbase N] [--train-size N]
//	    [--threads N] [--batch B] [--synthetic N --dim D] [--index-dir DIR [--reuse-index]]
//	    [--cpuprofile FILE] [--no-prune] [--map-files] [--seed S]
//
// Settings left out get the engine's defaults (ivfpq.DefaultParams,
// DefaultNProbe, DefaultRefine). Files are TEXMEX .fvecs/.bvecs (vectors)
// and .ivecs (ground truth, 0-based rows of base, best first). Without
// --learn the index trains on min(n, 100·nlist) random base vectors.
//
// --index-dir keeps the saved index (and its build time, in DIR/build_s);
// --reuse-index then opens it instead of training and adding again (a 1M
// build takes minutes), refusing an index of another shape or row count.
// --cpuprofile profiles the search sweep only. --prune 1,0.5,0.4 sweeps
// ivfpq's PruneFactor too (the early stop; 1 is lossless, the default
// ivfpq.DefaultPruneFactor); --no-prune turns list pruning off, to
// measure what it saves.
//
// The sweep reads the index and the base vectors (the re-rank's rows) as
// the engine does by default, from copies in huge-page memory
// (ivfpq.OpenResident, vfs.AllocResident); --map-files reads the index
// through a mapping of its file and the rows from the Go heap instead, as
// this benchmark did before and as `memrl serve --map-files` reads both.
//
// --batch B searches the queries B at a time (ivfpq.SearchBatch, the same
// results as one query per call) on --threads T workers: min(T, batches)
// goroutines take batches in turn, each with T/goroutines workers of its
// own, so one batch of the whole query set gets all T and many small
// batches one each. qps is then the queries over the sweep's wall time,
// cpu_us the process's CPU time (getrusage: every thread) per query, and
// p50_us/p99_us a batch's latency. --threads also sets the build's
// goroutines.
//
// --json writes a JSON array with one object per swept setting, with the
// fields nprobe, refine, prune (the PruneFactor; 0 with --no-prune), recall1, recall10, qps, mean_us, cpu_us (mean
// thread CPU time per query, Linux only: comparable across a loaded
// machine's moods where qps is not), pruned_lists (mean lists per query
// skipped by ivfpq's Voronoi bound), p50_us, p99_us,
// build_s, index_bytes, rss_bytes, open_first_query_ms, engine, index,
// threads and batch (1 and 1 without --batch).
// --out-ids writes each setting's returned ids to
// PREFIX.nprobeN.refineR.ivecs (PREFIX.nprobeN.refineR.pruneF.ivecs when
// --prune sweeps more than one factor).
//
// bench/faiss runs FAISS on the same files and prints both side by side.
package ann
