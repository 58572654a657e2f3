package ivfpq

import (
	"math/rand"
	"sync"

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

// trainPQ trains the codebooks on x ([n][dim]); sub-spaces run in parallel.
func trainPQ(x []float32, dim, m, ksub, workers int, seed int64) ([]float32, error) {
	n := len(x) / dim
	dsub := dim / m
	book := make([]float32, m*ksub*dsub)
	if n > ksub*pqMaxPerCentroid {
		x = subsample(x, dim, ksub*pqMaxPerCentroid, rand.New(rand.NewSource(seed^0x5eed)))
		n = len(x) / dim
	}
	errs := make([]error, m)
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(1, workers))
	for s := 0; s < m; s++ {
		wg.Add(1)
		sem <- struct{}{}
		go func(s int) {
			defer wg.Done()
			defer func() { <-sem }()
			sub := make([]float32, n*dsub)
			for i := 0; i < n; i++ {
				copy(sub[i*dsub:(i+1)*dsub], x[i*dim+s*dsub:i*dim+(s+1)*dsub])
			}
			c, err := kmeans(sub, dsub, kmeansConfig{k: ksub, niter: pqIter, workers: 1, seed: seed + int64(s)})
			if err != nil {
				errs[s] = err
				return
			}
			copy(book[s*ksub*dsub:], c)
		}(s)
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
