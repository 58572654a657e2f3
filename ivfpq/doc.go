// Package ivfpq is memrl's phase-1 approximate nearest-neighbour index: an
// inverted file (IVF) over a k-means coarse quantizer, with product-quantized
// (PQ) residual codes and exact re-ranking from the raw vectors.
//
// # Model
//
// Train learns NList coarse centroids (k-means, random start, at most 256
// training points per centroid, empty clusters split) and, on the residuals
// x − c(x) of the training sample to their nearest centroid, M codebooks of
// 2^Bits centroids each, one per sub-space. M need not divide Dim: the
// sub-spaces are consecutive runs of dimensions, the first Dim mod M of
// ⌈Dim/M⌉ dimensions and the rest of ⌊Dim/M⌋ (so 128 dimensions make 48
// sub-spaces, 32 of 3 and 16 of 2, and 24-byte 4-bit codes); everything
// past the codebooks (look-up tables, code layouts, scans) sees only M. A
// vector is stored in the list of its nearest centroid (always by L2) as
// the PQ code of its residual.
//
// Training memory is bounded by the sample, which callers bound in bytes
// (the engine: engine.TrainSampleBytes): apart from the centroids and
// codebooks it returns, Train allocates at most about the sample's size.
// k-means sums one cluster at a time per worker (one float64 row each, not
// a [NList][Dim]float64 table per worker), PQ residuals are formed one
// sub-space at a time into a buffer per worker, and k-means scratch is
// reused across the M sub-space runs.
//
// Two code kinds exist:
//   - Bits 8: one byte per sub-space; scored with float look-up tables
//     (simd.ScanPQ8).
//   - Bits 4: sixteen centroids per sub-space, codes stored in blocks of 32
//     vectors in simd's fast-scan layout, scored with byte look-up tables and
//     16-bit sums (simd.FastScan4). Vectors that cannot enter the candidate
//     set are skipped by a mask computed in SIMD: the kernel's 16-bit
//     threshold when the index stores no per-vector terms (IP), and
//     simd.ScoreMask otherwise (L2), which forms every vector's full score
//     with its own term and compares it with the worst candidate, bit for
//     bit as the scalar check does (simd.ScoreMask16 for the 16-bit terms
//     of a saved index's base segments).
//
// # Search
//
// Search(q, k, SearchParams{NProbe, Refine}, deleted, src):
//  1. the NProbe lists whose centroids are nearest q (L2) are scanned,
//     nearest first. The lists are chosen by one simd.DotBlockedF16 pass
//     over a copy of the centroids in half precision (scaled by a power of
//     two, in simd's blocked layout), plus their squared norms (computed at
//     Train and Open, not stored in the file): ‖q−c‖² = ‖q‖² + ‖c‖² −
//     2⟨q, c⟩; the chosen lists then get their exact float32 distance
//     (their scores' bias and the pruning bound's input) and are scanned in
//     order of it. Half the bytes of a float32 copy keep it in L2 at
//     IVF2048; only lists within the rounding of the nprobe-th can be
//     chosen differently.
//     From the 8th list on, a list is skipped when the Voronoi bound proves
//     it holds none of the k nearest rows (prune.go: the distance from q to
//     the bisector of the list's centroid and the nearest one, against the
//     exact k-th distance of the best candidates so far, refreshed at the
//     8th, 16th, 32nd, … list). At SearchParams.PruneFactor 1 recall
//     never drops; on sift1m-deb at IVF4096 it skips 6% of 32 probed
//     lists, 10% of 64, 14% of 128. Below 1 (the default is 0.5) it is an
//     adaptive stop: a list is skipped when its bound exceeds the factor
//     times the k-th distance, which ends the probe early for queries whose
//     first lists held close rows (at 1M, IVF2048, 10–40% of 32–256
//     lists, for at most 0.0003 of recall@10 at 0.5).
//     Needs a VectorSource and L2 geometry; SearchParams.NoPrune turns it
//     off;
//  2. each code gets an asymmetric distance from a per-query table. An IP
//     index whose training sample has unit norm (cosine collections) is
//     scored exactly as an L2 index: for unit vectors ‖q−x‖² ranks as
//     −⟨q, x⟩ does, and the L2 ADC accounts for the reconstruction's norm
//     where the inner-product ADC favours long reconstructions. Other IP:
//     ⟨q, c+r̂⟩ = ⟨q, c⟩ + Σ_m ⟨q_m, r̂_m⟩, one table for all lists plus the
//     list's ⟨q, c⟩. L2: ‖q−c−r̂‖² = ‖q−c‖² − 2Σ_m⟨q_m, r̂_m⟩ +
//     (‖r̂‖² + 2⟨c, r̂⟩); the last term is stored per vector at Add, so
//     again one table serves all lists and a probe costs only its scan.
//     4-bit tables are quantized to bytes once per query; which of a
//     chunk's 256 vectors can enter the candidates is decided in SIMD (see
//     Bits 4 above);
//  3. the best k·Refine candidates are kept (cands.go) in a buffer of twice
//     that size, cut back to the best k·Refine by a selection when it
//     fills, which also tightens the admission bound; the deleted bitmap is
//     consulted only for candidates good enough to enter it;
//  4. the candidates are re-scored exactly from src and the best k returned,
//     best first. Each row is prefetched (simd.Prefetch) rerankAhead rows
//     before it is read, so the cache misses of these scattered rows overlap. Sim is −‖q−x‖² for L2 and ⟨q, x⟩ for IP.
//
// SearchFiltered(q, k, sp, Filter{Deleted, Allow, Match, MinSim}, src) is
// Search with a filter and widening (filter.go): a candidate must be in
// Allow (when set), not in Deleted, and accepted by Match (when set), each
// checked only for codes good enough to enter the candidates; and when
// they are fewer than k·Refine after the probed lists, or once full
// its re-ranked rows hold fewer than k reaching MinSim, further lists are
// probed in centroid order, doubling the probed count each round, until k
// pass or every list is probed. So it returns fewer than k only when the
// index holds fewer than k rows that pass; it scans at most every code once
// and re-ranks at most 1 + ⌈log2(NList/NProbe)⌉ times. Search itself
// probes exactly NProbe lists (bench/ann sweeps it).
//
// SearchBatch(qs, k, sp, deleted, src, threads) and
// SearchBatchFiltered(qs, k, sp, f, src, threads) return, for each query
// of a matrix, what Search and SearchFiltered return for it, for less
// work than a loop (batch.go): the coarse step for 16 queries at a time
// as one pass of simd.DotBlockedF16Multi over the centroids (bit for bit
// the one-query scores, so the same lists), each probed list scanned once
// for every query of a chunk that probes it (the (query, list) pairs
// sorted by list, in Search's pruning rounds 0–7, 8–15, 16–31, … so that
// every skip is Search's), the queries cut into chunks in slab order so
// that a chunk's queries are alike (batchorder.go), the re-ranks' rows
// asked for a query ahead, on threads workers with pooled scratch; a
// worker whose chunks are done re-ranks queries of those still running
// (batchrerank.go). Queries that meet a damaged list, or must widen, are
// searched alone.
//
// Search parameters are passed per call and never stored, so concurrent
// searches with different settings do not interact. Cosine similarity is IP
// over normalised vectors; the caller normalises.
//
// # API
//
//	p := DefaultParams(n, dim, metric)           // or fill Params by hand
//	ix, err := Train(p, sample, workers, seed)  // sample: flat n·Dim float32
//	err = ix.Add(row, v)                        // row == ix.Rows()
//	err = ix.AddBatch(first, vecs, workers)     // bulk add / rebuild, first == ix.Rows()
//	TrainPaced(…, pace); ix.AddBatchPaced(…, pace) // on one worker, call pace between blocks of work
//	res, err := ix.Search(q, k, SearchParams{}, deleted, src)
//	res, st, err := ix.SearchFiltered(q, k, SearchParams{}, Filter{Deleted: d, Allow: a}, src)
//	all, err := ix.SearchBatch(qs, k, SearchParams{}, deleted, src, threads) // qs: n·Dim floats
//	ix.SetTrainedFor(n); n = ix.TrainedFor()     // the caller's training size, saved in the file
//	err = ix.Save(fs, dir); ix, err = Open(fs, dir); err = ix.Verify(); ix.Close()
//
// Search returns an error as well as the results, because list data is
// verified lazily: a list that fails its checksum on first read is never
// read, and never silently skipped either: with a VectorSource its rows
// (the rows no intact list holds) are scored exactly instead (damaged.go,
// SearchStats.Damaged); without one the search fails with ErrCorrupt.
// With a nil VectorSource no re-rank happens and Sim is the quantized
// estimate.
//
// # Concurrency
//
// Index.mu (a sync.RWMutex) guards the inverted lists and the row count.
// Search and Verify hold it shared; Add and AddBatch encode without it
// and hold it exclusively only to append. Save holds it shared only to
// note the lists' lengths and then to copy out one list at a time, never
// while writing or syncing: it writes the rows the index had when it
// began, and adds made meanwhile wait at most one list's copy. Centroids
// and codebooks are immutable after Train/Open.
//
// # Rows and crash safety
//
// INVARIANT: an index holds exactly rows [0, Rows()), each once. Add takes
// rows in order (row == Rows(), else ErrOutOfOrder and nothing changes). The
// engine saves the index at checkpoints; after a restart it opens the saved
// index and re-adds rows Rows(), Rows()+1, … from its vector file, so no
// memory is silently missing and the saved index never needs to be newer
// than the checkpoint. Deleted rows stay in the lists and are filtered by
// the bitmap given to Search.
//
// # File format (versions 2, 3 and 4)
//
// Save writes dir/ivfpq.idx through a vfs.FS atomically (vfs.AtomicFile:
// temporary file written back in paced pieces, fsync, rename, fsync of the
// directory), so a crash leaves the old file or the new one; the old file is
// not shrunk, since an index opened from it may still map it. Open maps it
// read-only with vfs.Map (mmap on the OS, a copy on vfs.MemFS). All integers are
// little-endian, all checksums xxhash64, all sections 8-byte aligned.
//
//	offset  size  field
//	     0     8  magic "MEMRLIVF"
//	     8     4  version: 4 for indexes with L2 terms (L2, or IP with
//	              the unit-norm flag), whatever M and Dim: 16-bit terms;
//	              for the others 2 when M divides Dim, 3 when it does not
//	              (the same layout; Open refuses either on the other kind
//	              of index, and 4 on an index without terms); Open also
//	              reads 1, and 2 and 3 files of indexes with terms
//	              (float32 terms), as builds before 4 wrote them
//	    12     4  header size (128)
//	    16    20  Dim, NList, M, Bits, Metric (uint32 each)
//	    36     4  rows
//	    40     8  meta offset (128)
//	    48     8  meta length = 4·(NList·Dim + 2^Bits·Dim)
//	    56     8  directory offset = meta offset + meta length, rounded up to 8
//	    64     8  data offset = directory offset + 32·NList
//	    72     8  data length (the data section ends the file)
//	    80     8  checksum of the meta section
//	    88     8  checksum of the directory
//	    96     4  flags: bit 0 = IP index over unit-norm vectors, scored by
//	              L2 ADC; other bits zero
//	   100     8  trained-for: the collection size the caller trained the
//	              index for (SetTrainedFor; 0 if unset); version 1 files
//	              have zero here and open with TrainedFor 0
//	   108    12  reserved, zero (version 1: [100, 120) reserved, zero)
//	   120     8  checksum of bytes [0, 120)
//	   128        meta: coarse centroids [NList][Dim]float32, then the
//	              codebooks, sub-space after sub-space:
//	              [2^Bits][width of sub-space s]float32 for s = 0..M−1
//	              (all Dim/M wide in version 2)
//	              directory: NList entries of 32 bytes
//	                0  8  segment offset from the data section start (multiple of 8)
//	                8  4  n, vectors in the list
//	               12  4  reserved, zero
//	               16  8  checksum of the segment's bytes
//	               24  4  version 4: term base (float32; finite)
//	               28  4  version 4: term step (float32; finite, >= 0)
//	                      (versions 1 to 3: [24, 32) reserved, zero)
//	              data: one segment per list:
//	                row ids [n]uint32, zero-padded to 8 bytes
//	                codes, zero-padded to 8 bytes: Bits 8: [n][M]byte;
//	                Bits 4: ceil(n/32) blocks of ceil(M/2)·32 bytes
//	                (simd's fast-scan layout)
//	                L2-scored indexes only (L2, or IP with the unit-norm
//	                flag): the terms ‖r̂‖² + 2⟨c, r̂⟩, zero-padded to 8
//	                bytes: version 4: [n]uint16 t, term ≈ base +
//	                float32(t)·step (the entry's base and step); versions
//	                1 to 3: [n]float32
//
// Version 4's grid is per list: base = the list's smallest term, step =
// (largest − smallest)/65535 (0 when they are equal), t = round((term −
// base)/step), so a stored term is within step/2 of the float32 one; at
// 1M vectors a list's terms span at most ~160,000, a step of ~2.5, far
// below the 4-bit table's quantization error, and the terms take 2 bytes
// a vector instead of 4. Saving again keeps a list's grid (its stored
// terms copied) while the terms added since Open fall within it, and
// otherwise regrids the list. Save refuses (ErrTermRange) terms that are
// not finite. A mapped base segment keeps its 16-bit terms; the 4-bit scan
// reads them with simd.ScoreMask16, folding base into its offset; tails
// hold float32 terms until the next Save.
//
// Open checks the header (magic, checksum, version, parameters, reserved
// bytes zero, every offset against the file size), the meta and directory checksums, that
// every segment lies inside the data section and the counts add up to rows,
// and (version 4) that every list's term base and step are finite, the
// step not negative.
// It decodes the centroids and codebooks and nothing else: list segments are
// views into the mapping, and a list's checksum, and that its row ids are
// below rows, are verified the first time a Search or Save reads it (Verify
// checks all of them at once). Vectors added
// after Open go to in-memory tails behind each mapped segment; the next Save
// merges them.
//
// # Errors
//
// ErrBadParams (invalid parameters or arguments), ErrCorrupt (a file that
// fails a check; from Open, or from Search/Save/Verify for list data),
// ErrNotIndexFile (from Open or Inspect: no index magic, some other file;
// it matches ErrCorrupt too),
// ErrVersion (unknown format version), ErrOutOfOrder (Add with row !=
// Rows()), ErrClosed (use after Close), ErrTermRange (Save of L2 terms
// that are not finite). Compare with errors.Is.
package ivfpq
