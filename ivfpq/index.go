package ivfpq

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/memrl/memrl/simd"
	"github.com/memrl/memrl/vfs"
)

// segment is a run of one inverted list's vectors stored contiguously: the
// row numbers, the PQ codes in the layout of the index's Bits (8-bit:
// [n][M] bytes; 4-bit: ceil(n/32) fast-scan blocks, see simd's doc) and,
// for indexes with L2 terms (Params.hasTerms), one term per vector: as
// float32 in terms (tails, and base segments read from files of versions 1
// to 3), or in 16-bit fixed point in terms16 on the list's grid (base
// segments of version 4 files; terms16.go).
// INVARIANT: a non-empty segment of an index with terms has exactly one of
// terms and terms16 set, of len(ids) entries; otherwise both are nil.
type segment struct {
	ids     []uint32
	codes   []byte
	terms   []float32 // float32 L2 terms, or nil
	terms16 []uint16  // 16-bit L2 terms on grid, or nil
	grid    termGrid  // terms16's grid; zero without terms16
}

// term returns vector i's L2 term, dequantized when stored in 16 bits.
// REQUIRES: the segment has terms.
func (s *segment) term(i int) float32 {
	if s.terms16 != nil {
		return s.grid.value(s.terms16[i])
	}
	return s.terms[i]
}

// invList is one inverted list. The base segment is a view of the mmap'd
// index file (nil for an index built in memory) and is never written; the
// tail holds vectors added since. Both are kept in increasing row order.
type invList struct {
	base segment
	tail segment
}

func (l *invList) len() int { return len(l.base.ids) + len(l.tail.ids) }

// Index is an IVF-PQ index. Search may run concurrently with itself, with
// Add and with Save; Close must not.
type Index struct {
	p      Params
	coarse []float32 // [NList][Dim] coarse centroids; immutable
	// coarseNorm holds the centroids' squared norms (padding +Inf, up to
	// coarseSlots(NList)).
	//
	// coarseBlk16 holds them again, times coarseScale (a power of two that
	// brings the largest magnitude to [2¹⁴, 2¹⁵)), rounded to half
	// precision in simd's blocked layout (NList rounded up to
	// simd.BlockRows, padding rows zero), and coarseNorm16 the squared
	// norms of those rounded centroids (unscaled; padding +Inf). The
	// search's coarse step ranks the lists by
	// ‖q‖² + coarseNorm16 − 2⟨q, c16⟩/coarseScale, one simd.DotBlockedF16
	// pass: at 2,048 × 128 the half-precision copy (0.5 MB) stays in L2
	// where the float32 one (1 MB) did not, and the pass took 6 µs instead
	// of 11.5 (Zen 5). The lists it picks then get exact distances
	// (exactProbesLocked), so only the choice of lists near the nprobe-th
	// can differ from float32's, never a probed list's score.
	// Derived from coarse in newIndex; immutable.
	coarseNorm   []float32
	coarseBlk16  []uint16
	coarseNorm16 []float32
	coarseScale  float32
	book         []float32 // PQ codebooks, ksub·Dim floats (pq.go: sub-space s at ksub·subOff(s)); immutable

	// mu guards lists, rows, listBytes, closed, mm, file and trainedFor. Search
	// holds it shared, Save shared one list at a time (never across I/O);
	// Add holds it exclusively only while appending.
	mu        sync.RWMutex
	lists     []invList
	rows      uint32 // INVARIANT: the lists hold exactly rows [0, rows), each once
	listBytes int64  // bytes of ids, codes and terms over all segments
	closed    bool
	// trainedFor is the caller's record of the collection size the index
	// was trained for (SetTrainedFor); ivfpq only stores it.
	trainedFor uint64
	mm         *vfs.Mapping // the opened file's mapping, nil when built in memory
	file       vfs.File

	// baseBytes[l] holds list l's base segment as stored, baseSum[l] is the checksum the file recorded for list l's base segment;
	// baseState[l] is listUnchecked, listGood or listBad. Checksums are
	// verified the first time a list is read, not at Open, so opening a large
	// index touches only its header, centroids and directory.
	baseBytes [][]byte // the on-disk bytes of each base segment
	baseSum   []uint64
	baseState []atomic.Uint32
	// baseRows is the rows the base segments hold: rows [0, baseRows),
	// each once (the file's row count; 0 for an index built in memory).
	// orphans are the damaged lists' rows among them, found when a search
	// first meets one (damaged.go). baseRows is immutable.
	baseRows uint32
	orphans  orphanRows

	scratch    sync.Pool // *searchScratch sized for this index
	batchPool  sync.Pool // *batchScratch for this index (batch.go)
	slabOnce   sync.Once // computes slabDir (batchorder.go)
	slabDir    []float32 // the batch's query-ordering direction; nil until slabOnce, or none
	encScratch sync.Pool // *encodeScratch sized for this index
}

const (
	listUnchecked uint32 = iota
	listGood
	listBad
)

// Params returns the parameters the index was trained with.
func (ix *Index) Params() Params {
	p := ix.p
	p.unitIP = false
	return p
}

// Train builds an empty index from a training sample (flat n*Dim float32).
// The coarse quantizer is k-means with NList centroids on at most 256 points
// per centroid; the PQ codebooks are trained on the residuals of the sample
// to their coarse centroids. workers bounds the goroutines used; seed makes
// training reproducible.
//
// Memory: besides the index's own centroids and codebooks
// (4·(NList·Dim + 2^Bits·Dim) bytes), Train allocates at most about the
// sample's size: a copy of the sample's subsample when it holds more than
// 256·NList vectors, and the residuals of at most 256·2^Bits vectors, one
// sub-space at a time. Callers bound the sample in bytes to bound training.
//
// The sample needs at least max(NList, 2^Bits) vectors. For IP indexes the
// vectors must already be normalised if cosine similarity is wanted.
func Train(p Params, sample []float32, workers int, seed int64) (*Index, error) {
	return TrainPaced(p, sample, workers, seed, nil)
}

// TrainPaced is Train that, on one worker, calls pace between blocks of
// its work (a few hundred microseconds at most apart), so that a caller on
// a single processor can sleep there and leave the processor to requests
// (engine paces builds when GOMAXPROCS is 1). With more workers pace is
// not called. The index is the same as Train's.
func TrainPaced(p Params, sample []float32, workers int, seed int64, pace func()) (*Index, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if len(sample)%p.Dim != 0 {
		return nil, fmt.Errorf("%w: sample length %d is not a multiple of Dim %d", ErrBadParams, len(sample), p.Dim)
	}
	n := len(sample) / p.Dim
	if need := max(p.NList, p.ksub()); n < need {
		return nil, fmt.Errorf("%w: training needs at least %d vectors, got %d", ErrBadParams, need, n)
	}
	workers = max(1, workers)
	if p.Metric == IP {
		p.unitIP = unitNorm(sample, p.Dim)
	}
	coarse, err := kmeans(sample, p.Dim, kmeansConfig{
		k: p.NList, niter: coarseIter, maxPerCentroid: coarseMaxPerCent, workers: workers, seed: seed, pace: pace,
	})
	if err != nil {
		return nil, err
	}

	// PQ trains on the residuals of (a subsample of) the training set to
	// their nearest coarse centroids. The subsample is a list of rows, not
	// a copy, and trainPQ forms the residuals one sub-space at a time.
	var rows []int
	npq := n
	if limit := p.ksub() * pqMaxPerCentroid; n > limit {
		rows = newRand(seed + 1).Perm(n)[:limit]
		npq = limit
	}
	labels := make([]int32, npq)
	parallelForPaced(npq, workers, pace, func(_, lo, hi int) {
		dist := make([]float32, p.NList)
		for i := lo; i < hi; i++ {
			r := i
			if rows != nil {
				r = rows[i]
			}
			labels[i] = nearest(sample[r*p.Dim:(r+1)*p.Dim], coarse, dist)
		}
	})
	book, err := trainPQ(sample, rows, labels, coarse, p, workers, seed+2, pace)
	if err != nil {
		return nil, err
	}
	return newIndex(p, coarse, book), nil
}

func newIndex(p Params, coarse, book []float32) *Index {
	scale := halfScale(coarse)
	scaled := make([]float32, len(coarse))
	for i, v := range coarse {
		scaled[i] = v * scale
	}
	blk16 := simd.BlockedF16(scaled, p.Dim)
	norms := make([]float32, coarseSlots(p.NList))
	norms16 := make([]float32, coarseSlots(p.NList))
	for l := range norms {
		if l >= p.NList {
			norms[l] = float32(math.Inf(1))
			norms16[l] = float32(math.Inf(1))
			continue
		}
		c := coarse[l*p.Dim : (l+1)*p.Dim]
		norms[l] = simd.Dot(c, c)
		var n16 float64
		for _, v := range c {
			r := float64(simd.FromFloat16(simd.ToFloat16(v*scale))) / float64(scale)
			n16 += r * r
		}
		norms16[l] = float32(n16)
	}
	ix := &Index{
		p:            p,
		coarse:       coarse,
		coarseNorm:   norms,
		coarseBlk16:  blk16,
		coarseNorm16: norms16,
		coarseScale:  scale,
		book:         book,
		lists:        make([]invList, p.NList),
		baseBytes:    make([][]byte, p.NList),
		baseSum:      make([]uint64, p.NList),
		baseState:    make([]atomic.Uint32, p.NList),
	}
	for l := range ix.baseState {
		ix.baseState[l].Store(listGood) // no base segments yet
	}
	return ix
}

// halfScale returns the power of two that brings the largest magnitude in
// x to [2¹⁴, 2¹⁵), so that x times it rounds to half precision with no
// overflow (the largest half is 65504) and the most precision the format
// has; 1 when x is all zeros or not finite. It stays within 2^±100, far
// inside float32's range, so multiplying and dividing by it are exact.
func halfScale(x []float32) float32 {
	var m float64
	for _, v := range x {
		m = max(m, math.Abs(float64(v)))
	}
	if m == 0 || math.IsInf(m, 0) || math.IsNaN(m) {
		return 1
	}
	_, exp := math.Frexp(m) // m < 2^exp
	return float32(math.Ldexp(1, min(max(15-exp, -100), 100)))
}

// coarseSlots is NList rounded up to whole blocks of simd.BlockRows: the
// length of coarseNorm and of a search's coarse distances.
func coarseSlots(nlist int) int {
	return (nlist + simd.BlockRows - 1) / simd.BlockRows * simd.BlockRows
}

// unitNorm reports whether every vector of x has norm 1 (to within float32
// rounding of a normalisation).
func unitNorm(x []float32, d int) bool {
	for i := 0; i < len(x)/d; i++ {
		v := x[i*d : (i+1)*d]
		if n := simd.Dot(v, v); n < 1-1e-3 || n > 1+1e-3 {
			return false
		}
	}
	return true
}

// subtract sets dst = a - b.
func subtract(dst, a, b []float32) {
	b = b[:len(a)]
	dst = dst[:len(a)]
	for i := range a {
		dst[i] = a[i] - b[i]
	}
}

// Rows returns the number of rows held. INVARIANT: the index holds exactly
// rows [0, Rows()).
func (ix *Index) Rows() uint32 {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.rows
}

// SetTrainedFor records n, the size of the collection the index was trained
// for, so that a caller deciding when to retrain after a restart decides as
// it would have without one. Save stores it in the file and Open restores
// it; ivfpq itself does not use it. Safe to call concurrently with Search,
// Add and Save (a Save running meanwhile may store the old value).
func (ix *Index) SetTrainedFor(n uint64) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.trainedFor = n
}

// TrainedFor returns the value given to SetTrainedFor, or stored in the file
// Open read: 0 if never set, and for files of format version 1, which did
// not record it.
func (ix *Index) TrainedFor() uint64 {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.trainedFor
}

// Bytes returns the size of the index in memory: centroids (in float32 and
// in half precision, and their norms), codebooks, row ids, codes and terms.
func (ix *Index) Bytes() int64 {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return int64(4*(len(ix.coarse)+len(ix.coarseNorm)+len(ix.coarseNorm16)+len(ix.book))+2*len(ix.coarseBlk16)) + ix.listBytes
}

// Close releases the file mapping. The index must not be used afterwards;
// calls other than Close then return ErrClosed (Search returns no results).
func (ix *Index) Close() error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.closed {
		return nil
	}
	ix.closed = true
	ix.lists = nil
	var err error
	if ix.mm != nil {
		err = ix.mm.Unmap()
		ix.mm = nil
	}
	if ix.file != nil {
		if cerr := ix.file.Close(); err == nil {
			err = cerr
		}
		ix.file = nil
	}
	return err
}
