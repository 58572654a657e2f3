package ivfpq

import (
	"sync"
	"sync/atomic"

	"github.com/memrl/memrl/simd"
)

// Product quantizer: the vector space is cut into M sub-spaces of dsub
// dimensions and each sub-space has its own codebook of ksub centroids. The
// codebook is laid out [M][ksub][dsub] (simd's layout), so a query's look-up
// table is one simd.PQLUTL2 / simd.PQLUTDot call.

const (
	pqIter           = 25  // Lloyd iterations per sub-space
	pqMaxPerCentroid = 256 // so at most 65,536 points train an 8-bit codebook
	coarseIter       = 10  // Lloyd iterations for the coarse quantizer (as FAISS's IVF training)
	coarseMaxPerCent = 256
)

// trainPQ trains the codebooks on the residuals x[r] − coarse[labels[i]] of
// the rows r = rows[i] of x ([n][dim]); rows nil means every row, and coarse
// nil means no coarse centroid is subtracted (x holds the vectors to
// quantize). Sub-spaces run in parallel, up to workers at a time.
//
// The residuals are never formed whole: each worker copies one sub-space's
// dim/M columns of them at a time into a buffer it reuses, so the working
// memory is min(workers, M) such buffers, at most the size of the rows
// trained on, instead of a residual copy of the sample and then a copy of
// every sub-space besides.
//
// REQUIRES: len(rows) (or n) <= ksub·pqMaxPerCentroid; labels[i] is the
// coarse list of rows[i] when coarse is not nil.
//
// pace, if not nil, is called between blocks of work when workers is 1
// (see parallelForPaced).
func trainPQ(x []float32, rows []int, labels []int32, coarse []float32, dim, m, ksub, workers int, seed int64, pace func()) ([]float32, error) {
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
	dsub := dim / m
	book := make([]float32, m*ksub*dsub)
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
			sub := make([]float32, n*dsub)
			var ks kmeansScratch
			for {
				s := int(next.Add(1) - 1)
				if s >= m {
					return
				}
				for i := 0; i < n; i++ {
					dst := sub[i*dsub : (i+1)*dsub]
					r := row(i)
					copy(dst, x[r*dim+s*dsub:r*dim+(s+1)*dsub])
					if coarse != nil {
						c := int(labels[i])
						for j, v := range coarse[c*dim+s*dsub : c*dim+(s+1)*dsub] {
							dst[j] -= v
						}
					}
				}
				cfg := kmeansConfig{k: ksub, niter: pqIter, workers: 1, seed: seed + int64(s), pace: pace}
				errs[s] = kmeansInto(sub, dsub, cfg, book[s*ksub*dsub:(s+1)*ksub*dsub], &ks)
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

// encodePQ writes the m sub-space codes of x (one vector) to codes[:m], one
// code (0..ksub-1) per byte: the nearest centroid of each sub-space. dist is
// scratch of at least m*ksub floats.
func encodePQ(x, book []float32, m, ksub int, codes []byte, dist []float32) {
	dist = dist[:m*ksub]
	simd.PQLUTL2(x, book, m, ksub, dist)
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

// decodePQ writes the reconstruction of codes (one byte per sub-space) to out.
func decodePQ(codes []byte, book []float32, m, ksub int, out []float32) {
	dsub := len(out) / m
	for j := 0; j < m; j++ {
		c := int(codes[j])
		copy(out[j*dsub:(j+1)*dsub], book[(j*ksub+c)*dsub:(j*ksub+c+1)*dsub])
	}
}
