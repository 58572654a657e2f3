package engine

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/memrl/memrl/ivfpq"
)

// The IVF-PQ index of a collection.
//
// An IVFPQ collection is searched exactly until it holds its training
// threshold of memories. Then a background build (on buildWorkers
// goroutines, leaving a processor to the requests) samples live vectors,
// trains the index, adds every row in chunks (copied out of the mapping
// under the read lock, so adds and searches go on), and finally, under the
// write lock, adds the few rows that arrived meanwhile and swaps the index
// in. From then on every add is also added to the index under the
// collection's write lock. When the collection has grown to retrainFactor
// times the size the index was trained on, the same build runs again and the
// new index replaces the old; that is checked at every add and when a build
// ends (the collection may have outgrown the new index while it was built). The training size is saved in the index file
// (ivfpq.Index.SetTrainedFor), so a restart does not move the next retrain
// (see trainedOnAtOpen).
//
// The index is derived data, saved to DIR/collections/<uid>/ivfpq/ after a
// build, when it has grown by a quarter since its last save, and at Close.
// It is never trusted beyond the log: the index file holds rows [0, R), and
// after replay it is used only if R <= the rows the log recreated. Rows are
// appended in log order, so rows below that count hold exactly the vectors
// the index encoded; a file past it describes adds a crash took away, and is
// discarded and rebuilt. Rows in [R, rows) are added at open.

// retrainFactor is how much a collection grows past its training size
// before the index is trained again: coarse lists trained on n points serve
// well up to a few n, after which lists grow long and recall per probe falls.
const retrainFactor = 4

// buildChunk is the most rows copied out of the mapping and encoded per
// step of a build; buildChunkBytes bounds a step's copy in bytes, so that
// large dimensions take fewer rows (see chunkRows).
const buildChunk = 65536

// The byte budgets of a build, variables so that tests can scale them down.
var (
	trainSampleBytes = TrainSampleBytes
	buildChunkBytes  = 64 << 20
)

// ivfPhase1 is phase 1 through a trained index.
type ivfPhase1 struct {
	c  *Collection
	ix *ivfpq.Index
}

func (p ivfPhase1) search(q []float32, opt SearchOptions) ([]candidate, error) {
	c := p.c
	nprobe := opt.NProbe
	if opt.Allow != nil {
		allowed := opt.Allow.GetCardinality()
		if opt.Path == PathAuto && useExact(opt, allowed, p.ix.Params(), int(c.vecs.nrows)) {
			return exactScan{c}.search(q, opt)
		}
		nprobe = filteredNProbe(nprobe, p.ix.Params().NList, allowed, int(c.vecs.nrows))
	}
	if opt.Path == PathExact {
		return exactScan{c}.search(q, opt)
	}
	f := ivfpq.Filter{Deleted: c.dead, Allow: opt.Allow, Match: opt.Match}
	if opt.HasDelta {
		// The index compares float32 similarities; rounding Delta up
		// keeps every result at least Delta, as the check below did.
		f.MinSim, f.HasMinSim = float32(opt.Delta), true
		if float64(f.MinSim) < opt.Delta {
			f.MinSim = math.Nextafter32(f.MinSim, float32(math.Inf(1)))
		}
	}
	res, st, err := p.ix.SearchFiltered(q, opt.K1, ivfpq.SearchParams{NProbe: nprobe, Refine: opt.Refine, PruneFactor: float32(opt.Stop)}, f, c.vecs)
	if err != nil {
		if !isIndexDamage(err) {
			return nil, err
		}
		// Damage the index could not search around (it does, given the
		// vectors): answer exactly, and have it rebuilt.
		c.indexDamaged(p.ix, err)
		return exactScan{c}.search(q, opt)
	}
	if st.Damaged && c.damage.bad.Load() != p.ix {
		// A list this query probed is damaged, and was searched around
		// (its rows scored exactly): have the index rebuilt
		// (index_damage.go). Verify names the list.
		c.indexDamaged(p.ix, p.ix.Verify())
	}
	out := make([]candidate, 0, len(res))
	for _, n := range res {
		if opt.HasDelta && float64(n.Sim) < opt.Delta {
			continue // cannot happen (MinSim >= Delta); kept as the rule's statement
		}
		out = append(out, candidate{row: n.Row, sim: n.Sim})
	}
	return out, nil
}

// describe names the index's shape, its rows and the collection size it
// was trained on (trained=N: the next retrain is due at retrainFactor·N, so
// a restart that kept the index shows the same N).
// REQUIRES: p.c.mu held at least for reading.
func (p ivfPhase1) describe() string {
	pp := p.ix.Params()
	return fmt.Sprintf("ivfpq nlist=%d pqm=%d pqbits=%d rows=%d trained=%d", pp.NList, pp.M, pp.Bits, p.ix.Rows(), p.c.trainedOn)
}

func (c *Collection) ivfMetric() ivfpq.Metric {
	if c.cfg.Metric == L2 {
		return ivfpq.L2
	}
	return ivfpq.IP // COSINE vectors are stored normalised
}

// trainRows is the most vectors of dimension dim a training sample holds:
// trainSampleBytes of them.
func trainRows(dim int) int { return max(trainSampleBytes/(4*dim), 1) }

// chunkRows is the number of rows a build step copies and encodes: at most
// buildChunk, and at most buildChunkBytes of vectors.
func chunkRows(dim int) uint32 { return uint32(min(max(buildChunkBytes/(4*dim), 1), buildChunk)) }

// ivfParams returns the index parameters for a collection of n memories.
// The default NList is halved until the training sample (at most
// trainRows) holds minPointsPerList vectors per list.
func (c *Collection) ivfParams(n int) ivfpq.Params {
	p := ivfpq.DefaultParams(n, c.cfg.Dim, c.ivfMetric())
	for p.NList > 1 && minPointsPerList*p.NList > trainRows(c.cfg.Dim) {
		p.NList /= 2
	}
	ic := c.cfg.Index
	if ic.NList > 0 {
		p.NList = ic.NList
	}
	switch {
	case ic.PQM > 0 && ic.PQBits > 0:
		p.M, p.Bits = ic.PQM, ic.PQBits
	case ic.PQM > 0:
		// PQM alone keeps the meaning it had before 4-bit codes became
		// the default: M sub-spaces of 8 bits, M bytes a code.
		p.M, p.Bits = ic.PQM, 8
	case ic.PQBits > 0:
		p.Bits = ic.PQBits
		if p.M = ivfpq.DefaultM(c.cfg.Dim, p.Bits); p.M == 0 {
			// Below 4 dimensions there is no default 4-bit code:
			// take the 8-bit sub-spaces.
			p.M = ivfpq.DefaultM(c.cfg.Dim, 8)
		}
	}
	return p
}

// indexAddLocked adds a new row to the live index, and starts a build when
// one is due. REQUIRES: c.mu held for writing; row == the index's Rows().
func (c *Collection) indexAddLocked(row uint32, v []float32) {
	if c.ivf != nil {
		if err := c.ivf.Add(row, v); err != nil {
			// Cannot happen while rows are appended in order; fall back to
			// exact search rather than serve an index missing a row.
			c.db.opts.Logf("memrl: collection %q: index add failed, searching exactly until rebuilt: %v", c.name, err)
			c.dropIndexLocked()
		} else if c.ivf.Rows() >= c.savedRows+c.savedRows/4+buildChunk {
			c.saveIndexAsyncLocked()
		}
		c.accountLocked() // datamem.go
	}
	c.maybeBuildLocked()
}

// maybeBuildLocked starts a background build if one is due.
// REQUIRES: c.mu held for writing.
func (c *Collection) maybeBuildLocked() {
	if c.cfg.Index.Kind != IndexIVFPQ || c.building || c.dropped {
		return
	}
	n := len(c.mems)
	if c.buildFailedAt > 0 && n < 2*c.buildFailedAt {
		return // a build failed at buildFailedAt memories: wait for more
	}
	due := c.ivf == nil && n >= c.cfg.Index.trainThreshold() ||
		c.ivf != nil && n >= retrainFactor*max(c.trainedOn, 1) && c.cfg.Index.NList == 0 ||
		c.indexDamagedLocked() // index_damage.go
	if !due {
		return
	}
	c.building = true
	c.cs.buildGen = c.gen // compact.go: a build of another generation's rows is discarded
	go c.build()
}

// dropIndexLocked stops using the index. REQUIRES: c.mu held for writing.
func (c *Collection) dropIndexLocked() {
	if c.ivf != nil {
		c.retired = append(c.retired, c.ivf)
		c.ivf = nil
		c.index = exactScan{c}
		c.accountLocked() // datamem.go
	}
}

// build trains and fills a new index in the background and swaps it in.
// It is not waited for at Close (training a large index takes a while): it
// checks c.dropped, which Close and Drop set, under the lock before each
// use of the collection, and discards its index if set.
func (c *Collection) build() {
	start := time.Now()
	ix, n, err := c.buildIndex()
	c.finishBuild(start, ix, n, err)
}

// finishBuild swaps in the index a build made on n memories (or records
// its failure), then starts the next build at once if the collection grew
// past its retrain size while this one ran: adds are what start builds, and
// a fill that outran the build may be over, so without this a collection
// filled quickly would keep an index trained on a fraction of it until
// its next add (or restart).
func (c *Collection) finishBuild(start time.Time, ix *ivfpq.Index, n int, err error) {
	c.lockWriter() // not queued on c.mu while a compaction commits
	c.building = false
	if err != nil {
		c.buildFailedAt = max(n, len(c.mems), 1)
	}
	if err == nil && c.gen != c.cs.buildGen {
		err = errCompacted // the rows it indexed were moved: build again
	}
	if err != nil || c.dropped {
		if errors.Is(err, errCompacted) {
			c.buildFailedAt = 0
			c.maybeBuildLocked()
		}
		c.mu.Unlock()
		if ix != nil {
			ix.Close()
		}
		if err != nil && !errors.Is(err, errDropped) && !errors.Is(err, errCompacted) {
			c.db.opts.Logf("memrl: collection %q: index build failed: %v", c.name, err)
		}
		return
	}
	// Rows added since the last chunk; few, so adds wait only briefly.
	for r := ix.Rows(); r < c.vecs.nrows; r++ {
		if err := ix.Add(r, c.vecs.row(r)); err != nil {
			c.mu.Unlock()
			ix.Close()
			c.db.opts.Logf("memrl: collection %q: index build failed: %v", c.name, err)
			return
		}
	}
	c.damage.bad.CompareAndSwap(c.ivf, nil) // the damaged index, if it was, is replaced
	c.dropIndexLocked()
	c.ivf, c.trainedOn, c.savedRows = ix, n, 0
	c.index = ivfPhase1{c, ix}
	c.accountLocked() // datamem.go
	c.saveIndexAsyncLocked()
	c.maybeBuildLocked()
	c.mu.Unlock()
	c.closeRetired()
	p := ix.Params()
	c.db.opts.Logf("memrl: collection %q: IVF-PQ index (nlist %d, pqm %d, pqbits %d) built on %d memories in %v",
		c.name, p.NList, p.M, p.Bits, n, time.Since(start).Round(time.Millisecond))
}

var errDropped = errors.New("collection dropped")

// buildIndex trains an index on a sample of the live vectors and adds rows
// in chunks until it is nearly caught up. It holds the read lock only while
// copying vectors out.
//
// Memory: the sample is at most 256·NList vectors and at most
// trainSampleBytes; training allocates at most about as much again (see
// ivfpq.Train); the chunks are copied out, one at a time, into one buffer of
// at most buildChunkBytes. So a build needs about 2·trainSampleBytes +
// buildChunkBytes besides the index it makes (and the codes of each chunk
// before they join it), whatever the collection's size and dimension.
func (c *Collection) buildIndex() (*ivfpq.Index, int, error) {
	c.mu.RLock()
	if c.dropped {
		c.mu.RUnlock()
		return nil, 0, errDropped
	}
	n := len(c.mems)
	p := c.ivfParams(n)
	limit := min(256*p.NList, trainRows(c.cfg.Dim))
	c.mu.RUnlock()
	sample, err := c.sample(rand.New(rand.NewSource(int64(n))), limit)
	if err != nil {
		return nil, 0, err
	}

	workers, pace := buildWorkers(), buildPace()
	ix, err := ivfpq.TrainPaced(p, sample, workers, int64(n), pace)
	if err != nil {
		return nil, 0, err
	}
	// Saved with the index, so that after a restart the next retrain is
	// due at the same size as without one (see trainedOnAtOpen).
	ix.SetTrainedFor(uint64(n))
	dim := c.cfg.Dim
	step := chunkRows(dim)
	// The rows left for build to add under the write lock: few, and no
	// more than one chunk's worth of encoding for large dimensions.
	rest := min(1024, step)
	var chunk []float32 // reused: AddBatch keeps nothing of it
	for {
		c.mu.RLock()
		if c.dropped || c.gen != c.cs.buildGen {
			err := errDropped
			if !c.dropped {
				err = errCompacted
			}
			c.mu.RUnlock()
			ix.Close()
			return nil, 0, err
		}
		from, nrows := ix.Rows(), c.vecs.nrows
		if nrows-from <= rest {
			c.mu.RUnlock()
			return ix, n, nil
		}
		to := min(from+step, nrows)
		chunk = append(chunk[:0], c.vecs.rows()[int(from)*dim:int(to)*dim]...)
		c.mu.RUnlock()
		if err := ix.AddBatchPaced(from, chunk, workers, pace); err != nil {
			ix.Close()
			return nil, 0, err
		}
	}
}

// sampleChunk is how many vectors sample copies under one hold of the
// read lock: 4096 rows of 128 floats are 2 MiB, about a millisecond.
var sampleChunk = 4096

// afterSampleChunk, when set (by tests only), runs after each chunk sample
// copies, with no lock held.
var afterSampleChunk func()

// sample copies up to limit live vectors chosen at random (every live one
// when there are no more), for training. It takes the read lock for each
// sampleChunk rows it copies, not for the whole sample, and fails with
// errDropped or errCompacted if the collection is dropped, or its rows
// moved, in between.
//
// Why in chunks: the sample is up to TrainSampleBytes (256 MiB, half a
// million random rows at DIM 128), a copy that took up to a second at 1M
// memories. A read lock held that long does not stop searches by itself,
// but a writer that comes meanwhile (an add, or a finished index save
// recording its rows) waits for it, and sync.RWMutex then holds back every
// new reader behind the writer: retrievals stalled for as long (a query
// of 1.1 to 1.5 s among eight clients during a retrain at 1M, twice).
func (c *Collection) sample(rng *rand.Rand, limit int) ([]float32, error) {
	dim := c.cfg.Dim
	c.mu.RLock()
	gen, nrows := c.gen, c.vecs.nrows
	var rows []uint32 // every live row, when there are no more than limit
	if len(c.mems) <= limit {
		rows = make([]uint32, 0, len(c.mems))
		for _, m := range c.mems {
			rows = append(rows, m.row)
		}
		limit = len(rows)
	}
	c.mu.RUnlock()
	out := make([]float32, 0, limit*dim)
	for got := 0; got < limit; {
		c.mu.RLock()
		switch {
		case c.dropped:
			c.mu.RUnlock()
			return nil, errDropped
		case c.gen != gen:
			c.mu.RUnlock()
			return nil, errCompacted
		case rows == nil && len(c.mems) == 0:
			c.mu.RUnlock()
			return nil, errors.New("every memory was deleted while the index build sampled them")
		}
		// Rows below nrows keep their vectors until a compaction (ruled
		// out above); a memory deleted since it was picked only leaves
		// its vector in the sample.
		tries := 0
		for end := min(got+sampleChunk, limit); got < end; {
			if rows != nil {
				out = append(out, c.vecs.row(rows[got])...)
				got++
				continue
			}
			if tries++; tries > 64*sampleChunk {
				// More than limit were live at the start; deletes since
				// left so few that picking at random no longer finds them.
				c.mu.RUnlock()
				return nil, errors.New("most memories were deleted while the index build sampled them")
			}
			// r < c.vecs.nrows: an add whose log write failed takes its
			// row back, and the row past the end is no memory's.
			if r := uint32(rng.Int63n(int64(nrows))); r < c.vecs.nrows && !c.dead.Contains(r) {
				out = append(out, c.vecs.row(r)...)
				got++
			}
		}
		c.mu.RUnlock()
		if afterSampleChunk != nil {
			afterSampleChunk()
		}
	}
	return out, nil
}

// indexDir is where a collection saves its index.
// It is named by the generation of the collection's files (compact.go),
// since its rows are theirs. REQUIRES: c.mu held, or c not yet shared.
func (c *Collection) indexDir() string { return filepath.Join(c.dir, genName(indexBase, "", c.gen)) }

// saveIndexAsyncLocked saves the current index in the background.
// REQUIRES: c.mu held for writing.
func (c *Collection) saveIndexAsyncLocked() {
	if c.ivf == nil || c.saving || c.indexDamagedLocked() {
		return // a damaged index is not saved: its rebuild will be
	}
	c.saving = true
	ix, dir := c.ivf, c.indexDir()
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		err := c.saveIndex(ix, dir)
		c.lockWriter()
		c.saving = false
		c.mu.Unlock()
		// Indexes retired while this save ran (a build's swap) were left
		// open for it; close them now.
		c.closeRetired()
		switch {
		case isIndexDamage(err):
			// A list read from the file, not yet searched, is damaged.
			c.indexDamaged(ix, err)
		case err != nil && !errors.Is(err, ivfpq.ErrClosed):
			c.db.opts.Logf("memrl: collection %q: saving the index: %v", c.name, err)
		}
	}()
}

// saveIndex writes ix to the collection's index folder, through the
// database's FS like every other file (so crash tests cover it). The index
// is closed only after every save of it has returned (see closeRetired).
// dir is the index folder of the generation ix indexes (read under the
// lock with ix: a compaction may move to the next one meanwhile).
func (c *Collection) saveIndex(ix *ivfpq.Index, dir string) error {
	if err := c.makeIndexDir(dir); err != nil {
		return err
	}
	rows := ix.Rows()
	if err := ix.Save(c.db.fs, dir); err != nil {
		return err
	}
	c.lockWriter()
	if c.ivf == ix {
		c.savedRows = rows
	}
	c.mu.Unlock()
	return nil
}

// makeIndexDir creates the index folder if it is missing and makes its
// entry in the collection's folder durable, so that an index file whose
// save returned is not lost with a folder entry that never reached the
// disk.
func (c *Collection) makeIndexDir(dir string) error {
	if st, err := c.db.fs.Stat(dir); err == nil && st.IsDir() {
		return nil
	}
	if err := c.db.fs.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return c.db.fs.SyncDir(c.dir)
}

// closeRetired closes indexes replaced by a newer one once no save of
// theirs is running. Searches never hold a retired index: it was swapped
// out under the write lock.
func (c *Collection) closeRetired() {
	c.lockWriter()
	if c.saving {
		c.mu.Unlock()
		return // the running save's collection will be closed later
	}
	old := c.retired
	c.retired = nil
	c.mu.Unlock()
	for _, ix := range old {
		ix.Close()
	}
}

// openIndexLocked loads the saved index after replay and catches it up with
// the rows added since it was saved, or starts a build if it is missing,
// damaged or describes rows the log does not have.
// REQUIRES: c not yet shared (Open has not returned).
func (c *Collection) openIndexLocked() {
	if c.cfg.Index.Kind != IndexIVFPQ {
		return
	}
	openIndex := ivfpq.OpenResident
	if c.db.opts.MapFiles {
		openIndex = ivfpq.Open
	}
	ix, err := openIndex(c.db.fs, c.indexDir())
	discard := true
	switch {
	case err != nil && errors.Is(err, os.ErrNotExist):
		discard = false
	case err != nil:
		if isIndexDamage(err) {
			c.damage.found.Add(1) // damage to the header, centroids or directory
		}
		c.db.opts.Logf("memrl: collection %q: saved index unusable, rebuilding: %v", c.name, err)
	case ix.Rows() > c.vecs.nrows || ix.Params().Dim != c.cfg.Dim:
		c.db.opts.Logf("memrl: collection %q: saved index has %d rows, the log %d; rebuilding", c.name, ix.Rows(), c.vecs.nrows)
		ix.Close()
	default:
		if err := c.catchUpLocked(ix); err != nil {
			c.db.opts.Logf("memrl: collection %q: saved index unusable, rebuilding: %v", c.name, err)
			ix.Close()
			break
		}
		discard = false
		c.ivf, c.trainedOn, c.savedRows = ix, c.trainedOnAtOpen(ix), ix.Rows()
		c.index = ivfPhase1{c, ix}
		c.accountLocked() // datamem.go
		if checkIndexAtOpen {
			// Said at start, not met by a query. A damaged list
			// leaves the index in service for the queries that do not
			// probe it; maybeBuildLocked below starts its rebuild.
			if err := ix.Verify(); isIndexDamage(err) {
				c.noteIndexDamage(ix, err)
			}
		}
	}
	if discard {
		// Remove the file: once adds refill the rows it describes
		// with other vectors, a later open would find it consistent.
		rerr := c.db.fs.RemoveAll(c.indexDir())
		if rerr == nil {
			rerr = c.db.fs.SyncDir(c.dir)
		}
		if rerr != nil {
			c.db.opts.Logf("memrl: collection %q: removing the discarded index: %v", c.name, rerr)
		}
	}
	c.maybeBuildLocked()
}

// trainedOnAtOpen is the training size of a saved index: the one it
// recorded, so that retraining is decided exactly as if the collection had
// stayed open. A file of ivfpq format version 1 did not record it; its shape
// tells instead. If its NList is what the collection's size now calls for,
// it is taken as trained at the current size (what this engine used to
// assume for every file); if not, the size it was trained on was smaller
// by at least retrainFactor (NList grows as 4·√n), so a retrain is due now:
// 0 makes the first maybeBuildLocked start one.
// REQUIRES: c not yet shared (Open has not returned).
func (c *Collection) trainedOnAtOpen(ix *ivfpq.Index) int {
	if n := ix.TrainedFor(); n > 0 {
		return int(min(n, math.MaxInt32))
	}
	if ix.Params().NList == c.ivfParams(len(c.mems)).NList {
		return len(c.mems)
	}
	return 0
}

// catchUpLocked adds rows [ix.Rows(), nrows) to ix.
func (c *Collection) catchUpLocked(ix *ivfpq.Index) error {
	dim := c.cfg.Dim
	step := chunkRows(dim)
	for from := ix.Rows(); from < c.vecs.nrows; from = ix.Rows() {
		to := min(from+step, c.vecs.nrows)
		if err := ix.AddBatch(from, c.vecs.rows()[int(from)*dim:int(to)*dim], runtime.GOMAXPROCS(0)); err != nil {
			return err
		}
	}
	return nil
}

// closeIndex waits for background saves, saves the index if it grew since
// its last save (when save is set), and closes it.
// REQUIRES: c.dropped set, so no build swaps a new index in.
func (c *Collection) closeIndex(save bool) {
	c.bg.Wait()
	c.mu.Lock()
	ix, saved, dir, damaged := c.ivf, c.savedRows, c.indexDir(), c.indexDamagedLocked()
	c.mu.Unlock()
	if save && ix != nil && ix.Rows() > saved && !damaged {
		if err := c.saveIndex(ix, dir); err != nil {
			c.db.opts.Logf("memrl: collection %q: saving the index: %v", c.name, err)
		}
	}
	c.mu.Lock()
	c.dropIndexLocked()
	c.mu.Unlock()
	c.closeRetired()
}

// buildWorkers is the goroutines a background build uses: all processors
// but one, and at least one. A build that occupies every processor leaves
// the goroutine of a request that arrives nothing to run on until the
// scheduler preempts a build worker, up to its 10 ms time slice later:
// retrieval's p99 went from 1.3 ms to 24 ms during a build on 2 cores
// (BenchmarkRetrieveDuringBuild).
func buildWorkers() int { return max(runtime.GOMAXPROCS(0)-1, 1) }

// buildPace returns what a build calls between small blocks of its work:
// nil when it leaves a processor free (buildWorkers), else, on a single
// processor (GOMAXPROCS 1), a pacer's step: the build then shares the only
// processor with every request, and without pauses a request that arrives
// waits for the scheduler to preempt it (up to 10 ms). Each pause leaves
// the processor idle, so the network poller hands it to a waiting request
// at once; the build takes about 1.5 times as long.
func buildPace() func() {
	if runtime.GOMAXPROCS(0) > 1 {
		return nil
	}
	return newPacer().step
}
