package ivfpq

import (
	"fmt"
	"math/rand"

	"github.com/memrl/memrl/simd"
)

func newRand(seed int64) *rand.Rand { return rand.New(rand.NewSource(seed)) }

// encoded is one vector ready to append: its list and its PQ code, one byte
// per sub-space (unpacked even for 4-bit codes).
type encoded struct {
	list int32
	code []byte
}

// encodeScratch is working memory for encodeOne.
type encodeScratch struct {
	coarseDist []float32 // [NList]
	resid      []float32 // [Dim]
	recon      []float32 // [Dim]
	lut        []float32 // [M*ksub]
}

func (ix *Index) newEncodeScratch() *encodeScratch {
	return &encodeScratch{
		coarseDist: make([]float32, ix.p.NList),
		resid:      make([]float32, ix.p.Dim),
		recon:      make([]float32, ix.p.Dim),
		lut:        make([]float32, ix.p.M*ix.p.ksub()),
	}
}

// encodeOne finds v's nearest coarse centroid and PQ-encodes the residual to
// it into code ([M]byte). It returns the list and, for indexes with terms,
// the L2 term ‖r̂‖² + 2⟨c, r̂⟩ of the reconstructed residual r̂.
func (ix *Index) encodeOne(v []float32, code []byte, s *encodeScratch) (int32, float32) {
	d := ix.p.Dim
	simd.L2SqBatch(v, ix.coarse, s.coarseDist)
	best, bl := s.coarseDist[0], 0
	for l, x := range s.coarseDist {
		if x < best {
			best, bl = x, l
		}
	}
	subtract(s.resid, v, ix.coarse[bl*d:(bl+1)*d])
	encodePQ(ix.p, s.resid, ix.book, code, s.lut)
	var term float32
	if ix.p.hasTerms() {
		decodePQ(ix.p, code, ix.book, s.recon)
		term = simd.Dot(s.recon, s.recon) + 2*simd.Dot(ix.coarse[bl*d:(bl+1)*d], s.recon)
	}
	return int32(bl), term
}

// Add appends vector v as row. Rows are added in increasing order with no
// gaps: row must equal Rows(), else ErrOutOfOrder and nothing changes.
// The encoding runs before the index lock is taken, so searches are blocked
// only for the append itself.
func (ix *Index) Add(row uint32, v []float32) error {
	if len(v) != ix.p.Dim {
		return fmt.Errorf("%w: vector has %d dimensions, index has %d", ErrBadParams, len(v), ix.p.Dim)
	}
	code := make([]byte, ix.p.M)
	s, ok := ix.encScratch.Get().(*encodeScratch)
	if !ok {
		s = ix.newEncodeScratch()
	}
	l, term := ix.encodeOne(v, code, s)
	ix.encScratch.Put(s)
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.closed {
		return ErrClosed
	}
	if row != ix.rows {
		return fmt.Errorf("%w: got row %d, expected %d", ErrOutOfOrder, row, ix.rows)
	}
	ix.appendLocked(l, row, code, term)
	ix.rows++
	return nil
}

// AddBatch appends the vectors of vecs (flat n*Dim) as rows first,
// first+1, …, encoding them on up to workers goroutines. first must equal
// Rows(); on any error nothing is added.
func (ix *Index) AddBatch(first uint32, vecs []float32, workers int) error {
	return ix.AddBatchPaced(first, vecs, workers, nil)
}

// AddBatchPaced is AddBatch that, on one worker, calls pace between blocks
// of encoding (see TrainPaced).
func (ix *Index) AddBatchPaced(first uint32, vecs []float32, workers int, pace func()) error {
	d := ix.p.Dim
	if len(vecs)%d != 0 {
		return fmt.Errorf("%w: batch length %d is not a multiple of Dim %d", ErrBadParams, len(vecs), d)
	}
	n := len(vecs) / d
	if uint64(first)+uint64(n) > 1<<32 {
		return fmt.Errorf("%w: rows beyond 2^32", ErrBadParams)
	}
	m := ix.p.M
	codes := make([]byte, n*m)
	lists := make([]int32, n)
	terms := make([]float32, n)
	var s *encodeScratch // one worker's, reused across its paced blocks
	if workers <= 1 {
		s = ix.newEncodeScratch()
	}
	parallelForPaced(n, workers, pace, func(_, lo, hi int) {
		s := s
		if s == nil {
			s = ix.newEncodeScratch()
		}
		for i := lo; i < hi; i++ {
			lists[i], terms[i] = ix.encodeOne(vecs[i*d:(i+1)*d], codes[i*m:(i+1)*m], s)
		}
	})
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.closed {
		return ErrClosed
	}
	if first != ix.rows {
		return fmt.Errorf("%w: got row %d, expected %d", ErrOutOfOrder, first, ix.rows)
	}
	for i := 0; i < n; i++ {
		ix.appendLocked(lists[i], first+uint32(i), codes[i*m:(i+1)*m], terms[i])
	}
	ix.rows += uint32(n)
	return nil
}

// appendLocked appends one encoded vector to the tail of list l.
// REQUIRES: ix.mu held exclusively.
func (ix *Index) appendLocked(l int32, row uint32, code []byte, term float32) {
	t := &ix.lists[l].tail
	before := int64(len(t.codes))
	if ix.p.Bits == 8 {
		t.codes = append(t.codes, code...)
	} else {
		t.codes = appendCode4(t.codes, len(t.ids), ix.p.M, code)
	}
	t.ids = append(t.ids, row)
	ix.listBytes += 4 + int64(len(t.codes)) - before
	if ix.p.hasTerms() {
		t.terms = append(t.terms, term)
		ix.listBytes += 4
	}
}
