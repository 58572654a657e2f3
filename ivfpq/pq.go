package ivfpq

import (
	"sync"
	"sync/atomic"

	"github.com/memrl/memrl/simd"
)

// Product quantizer: the vector space is cut into M sub-spaces (of
// Params.subDim(s) dimensions each, not necessarily all equal) and each
// sub-space has its own codebook of ksub centroids. The codebooks are laid
// out one after the other, sub-space s's [ksub][subDim(s)] at float
// ksub·subOff(s). Since the widths take at most two values, wide sub-spaces
// first, the codebooks are two runs in simd's [m][ksub][dsub] layout and a
// query's look-up table is at most two simd.PQLUTL2 / simd.PQLUTDot calls
// (pqLUT).

const (
	pqIter           = 25  // Lloyd iterations per sub-space
	pqMaxPerCentroid = 256 // so at most 65,536 points train an 8-bit codebook
	coarseIter       = 10  // Lloyd iterations for the coarse quantizer (as FAISS's IVF training)
	coarseMaxPerCent = 256
)

// trainPQ trains the codebooks of p's sub-spaces (p.bookLen() floats) on
// the residuals x[r] − coarse[labels[i]] of the rows r = rows[i] of x
// ([n][Dim]); rows nil means every row, and coarse nil means no coarse
// centroid is subtracted (x holds the vectors to quantize). Sub-spaces run
// in parallel, up to workers at a time.
//
// The residuals are never formed whole: each worker copies one sub-space's
// columns of them at a time into a buffer it reuses, so the working
// memory is min(workers, M) such buffers, at most the size of the rows
// trained on, instead of a residual copy of the sample and then a copy of
// every sub-space besides.
//
// REQUIRES: p valid; len(rows) (or n) <= ksub·pqMaxPerCentroid; labels[i]
// is the coarse list of rows[i] when coarse is not nil.
//
// pace, if not nil, is called between blocks of work when workers is 1
// (see parallelForPaced).
func trainPQ(x []float32, rows []int, labels []int32, coarse []float32, p Params, workers int, seed int64, pace func()) ([]float32, error) {
	dim, m, ksub := p.Dim, p.M, p.ksub()
	n := len(x) / dim
	if rows != nil {
		n = len(rows)
	}
	row := func(i int) int {
		if rows != nil {
			return rows[i]
		}
		return i
	}
	book := make([]float32, p.bookLen())
	// Up to workers goroutines take sub-spaces in turn, each reusing its
	// own residual columns and k-means scratch.
	workers = max(1, min(workers, m))
	if workers > 1 {
		pace = nil // the sub-spaces' k-means run on several goroutines
	}
	errs := make([]error, m)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sub := make([]float32, n*p.subDim(0)) // sub-space 0 is among the widest
			var ks kmeansScratch
			for {
				s := int(next.Add(1) - 1)
				if s >= m {
					return
				}
				off, dsub := p.subOff(s), p.subDim(s)
				for i := 0; i < n; i++ {
					dst := sub[i*dsub : (i+1)*dsub]
					r := row(i)
					copy(dst, x[r*dim+off:r*dim+off+dsub])
					if coarse != nil {
						c := int(labels[i])
						for j, v := range coarse[c*dim+off : c*dim+off+dsub] {
							dst[j] -= v
						}
					}
				}
				cfg := kmeansConfig{k: ksub, niter: pqIter, workers: 1, seed: seed + int64(s), pace: pace}
				errs[s] = kmeansInto(sub[:n*dsub], dsub, cfg, book[ksub*off:ksub*(off+dsub)], &ks)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return book, nil
}

// pqLUT fills lut ([M][ksub]) with, for every sub-space s and centroid c,
// the squared distance (l2) or the dot product (!l2) between x's
// sub-vector s and centroid c of book. The wide and the narrow sub-spaces
// are each one run of equal widths, so this is one simd call per run.
// REQUIRES: len(x) == p.Dim, len(book) == p.bookLen(), len(lut) >= M·ksub.
func pqLUT(p Params, x, book, lut []float32, l2 bool) {
	f := simd.PQLUTDot
	if l2 {
		f = simd.PQLUTL2
	}
	ksub, w := p.ksub(), p.wideSubs()
	split := p.subOff(w) // first dimension of the narrow run
	if w > 0 {
		f(x[:split], book[:ksub*split], w, ksub, lut[:w*ksub])
	}
	if w < p.M {
		f(x[split:], book[ksub*split:], p.M-w, ksub, lut[w*ksub:p.M*ksub])
	}
}

// encodePQ writes the M sub-space codes of x (one vector) to codes[:M], one
// code (0..ksub-1) per byte: the nearest centroid of each sub-space. dist is
// scratch of at least M·ksub floats.
func encodePQ(p Params, x, book []float32, codes []byte, dist []float32) {
	m, ksub := p.M, p.ksub()
	dist = dist[:m*ksub]
	pqLUT(p, x, book, dist, true)
	for j := 0; j < m; j++ {
		row := dist[j*ksub : (j+1)*ksub]
		best, bc := row[0], 0
		for c := 1; c < ksub; c++ {
			if row[c] < best {
				best, bc = row[c], c
			}
		}
		codes[j] = byte(bc)
	}
}

// decodePQ writes the reconstruction of codes (one byte per sub-space) to
// out ([Dim]).
func decodePQ(p Params, codes []byte, book []float32, out []float32) {
	ksub := p.ksub()
	for j := 0; j < p.M; j++ {
		off, dsub := p.subOff(j), p.subDim(j)
		c := int(codes[j])
		copy(out[off:off+dsub], book[ksub*off+c*dsub:ksub*off+(c+1)*dsub])
	}
}
