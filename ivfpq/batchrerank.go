package ivfpq

import (
	"runtime"
	"slices"
	"sync/atomic"
)

// The re-rank phase of a batch chunk, shared by the batch's workers.
//
// Why: a batch cuts its queries into one chunk a worker, so that as many
// queries as possible share each list's read (a chunk of 2,000 on one
// thread reads 6% less CPU than two of 1,000, so finer chunks cost more
// than they balance). With one chunk each, a worker the machine slows
// (another process, a VM's stolen time) finishes last while the other
// waits: on this VM's 2 cores the batch kept 1.88–1.98 cores busy (median
// per set) where hnswlib's per-query threads kept 1.99. The re-rank is a
// sixth of a chunk's work at 1M and is per query, so a worker whose chunks
// are done takes queries of a chunk still re-ranking, and an imbalance up
// to that share is absorbed. Measured by alternating batches with and
// without helpers in one process (1M, IVF2048,PQ52x4, 2,000 queries on 2
// threads, nprobe 48, Refine 8): cores busy 1.93 → 1.99 (medians of 20
// pairs) and QPS ×1.00 at a quieter time, 1.98 → 1.99 and QPS ×1.01 (30
// pairs) at another; at nprobe 160, Refine 32, ×1.00 (15 pairs). It
// costs nothing measurable when the workers finish together and keeps
// the batch from waiting on one slowed core when they do not.
//
// The protocol, per chunk:
//   - the owner scans the chunk's lists, settles every candidate set and
//     marks the queries that must widen, then opens the job;
//     from then on the chunk's query state is only read, except each
//     query's alone flag, which only the worker re-ranking it writes;
//   - each worker re-ranking claims one query at a time (next) and counts
//     it done when its result is stored;
//   - the owner, out of queries to claim, waits until every claimed query
//     is done before it releases ix.mu, so that a helper reads the index
//     and the rows under the owner's read lock (a helper never takes the
//     lock itself: it could wait behind a writer that waits for the
//     owner);
//   - the owner marks the job over when the chunk ends, re-ranked or
//     failed.
//
// A job's state changes under batchRun.jobMu and wakes the helpers
// waiting on batchRun.jobCond: no channel, so that a batch allocates
// nothing for its jobs (TestSearchBatchAllocations).
//
// INVARIANT: a helper touches a job's chunk state only for a query it
// claimed below n, and the owner holds ix.mu for reading until done == n.

// A rerankJob's states.
const (
	jobScanning = iota // the owner has not opened the re-rank yet
	jobOpen            // queries can be claimed
	jobOver            // the chunk is done, or failed
)

// rerankJob is one chunk's re-rank phase.
type rerankJob struct {
	state int // guarded by batchRun.jobMu
	// Set by the owner before it opens the job; read-only after.
	b      *batchScratch
	lo, n  int // the chunk's first query in the batch and its size
	qs     []float32
	out    [][]Neighbor
	flat   []Neighbor
	next   atomic.Int32 // the next query to claim
	done   atomic.Int32 // queries re-ranked (or marked alone)
	helped atomic.Int32 // queries re-ranked by a worker other than the owner
}

// testHookRerankOpen, when set (by tests only, before the batch), runs on
// a chunk's owner right after it opens the chunk's re-rank.
var testHookRerankOpen func(job *rerankJob)

// initJobs gives r a job for each of its chunks, in r itself when they
// are few.
func (r *batchRun) initJobs() {
	r.jobCond.L = &r.jobMu
	if r.nchunks <= len(r.jobsBuf) {
		r.jobs = r.jobsBuf[:r.nchunks]
	} else {
		r.jobs = make([]rerankJob, r.nchunks)
	}
}

// setJobState moves job to state and wakes the workers waiting for one.
func (r *batchRun) setJobState(job *rerankJob, state int) {
	r.jobMu.Lock()
	job.state = state
	r.jobMu.Unlock()
	r.jobCond.Broadcast()
}

// rerankChunkLocked is step 3 of batchChunkLocked: it settles the chunk's
// candidate sets, marks those that widen, opens job and re-ranks queries
// until none is left to claim, then waits for the helpers' claims.
// REQUIRES: ix.mu held for reading; job's chunk state set but for
// b, qs, out and flat, which it sets.
func (ix *Index) rerankChunkLocked(r *batchRun, job *rerankJob, b *batchScratch, qs []float32, out [][]Neighbor, flat []Neighbor) {
	p := ix.p
	for i := range b.qs {
		bq := &b.qs[i]
		if bq.alone {
			continue
		}
		bq.cands.settle() // so that re-ranking only reads it
		if r.widen && !bq.cands.full() && r.canWiden(bq, p.NList) {
			bq.alone = true // too few candidates: it widens
		}
	}
	job.b, job.qs, job.out, job.flat = b, qs, out, flat
	r.setJobState(job, jobOpen)
	if testHookRerankOpen != nil {
		testHookRerankOpen(job)
	}
	ix.rerankClaims(r, job, b.s, false)
	for job.done.Load() < int32(job.n) {
		runtime.Gosched() // a helper is finishing a query it claimed
	}
}

// canWiden reports whether bq's search left lists of nlist unprobed, so
// that a query short of results can widen (SearchFiltered's semantics).
func (r *batchRun) canWiden(bq *batchQuery, nlist int) bool {
	return r.nprobe-bq.skipped != nlist
}

// helpRerank re-ranks queries of the batch's chunks that are still
// re-ranking, for a worker with no chunk left; s is its scratch. It waits
// for each chunk's phase to start or the chunk to end, in chunk order.
// REQUIRES: every chunk claimed by a worker (so that each job opens or
// ends); ix.mu not held by the caller.
func (r *batchRun) helpRerank(s *searchScratch) {
	for i := range r.jobs {
		job := &r.jobs[i]
		r.jobMu.Lock()
		for job.state == jobScanning {
			r.jobCond.Wait()
		}
		open := job.state == jobOpen
		r.jobMu.Unlock()
		if open {
			r.ix.rerankClaims(r, job, s, true)
		}
	}
}

// rerankClaims claims job's queries one at a time until none is left and
// re-ranks each with scratch s.
func (ix *Index) rerankClaims(r *batchRun, job *rerankJob, s *searchScratch, helper bool) {
	b, dim, k := job.b, ix.p.Dim, r.k
	for {
		i := int(job.next.Add(1)) - 1
		if i >= job.n {
			return
		}
		if bq := &b.qs[i]; !bq.alone {
			q := job.qs[i*dim : (i+1)*dim]
			var next *candSet // its first rows are asked for while this query's last are scored
			if r.src != nil && i+1 < job.n {
				next = &b.qs[i+1].cands
			}
			res := ix.rerankCands(q, k, r.src, &bq.cands, s, next, &bq.memo)
			widens := false
			if r.widen && r.f.HasMinSim {
				res = slices.DeleteFunc(res, func(n Neighbor) bool { return !(n.Sim >= r.f.MinSim) })
				widens = len(res) < k && r.canWiden(bq, ix.p.NList) // too few reach MinSim
			}
			if widens {
				bq.alone = true
			} else {
				job.out[i] = job.flat[i*k : i*k+copy(job.flat[i*k:(i+1)*k], res[:min(k, len(res))])]
			}
			if helper {
				job.helped.Add(1)
			}
		}
		job.done.Add(1)
	}
}
