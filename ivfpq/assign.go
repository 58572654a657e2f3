package ivfpq

import (
	"math"

	"github.com/memrl/memrl/simd"
)

// Nearest-centroid assignment, the inner loop of k-means training, of Add and
// of PQ encoding.
//
// Points are processed in blocks and centroids in chunks so that one chunk of
// centroids stays in cache while every point of the block is scored against
// it; all arithmetic is simd.L2SqBatch.

const (
	assignPointBlock = 64
	assignCentBytes  = 64 << 10 // centroid chunk size that fits in L2 with room to spare
)

// assignScratch is per-goroutine working memory for assignRange.
type assignScratch struct {
	dist []float32 // [block*chunk] distances of one block to one chunk
	best []float32 // [block] best distance so far
}

// assignRange sets labels[i] (and dists[i] when dists != nil) to the nearest
// of the k centroids (cent, [k][d]) for every point i in [lo, hi) of x
// ([n][d]). Ties go to the lower centroid number.
func assignRange(x []float32, d int, cent []float32, k int, lo, hi int, labels []int32, dists []float32, s *assignScratch) {
	chunk := max(1, min(k, assignCentBytes/(4*d)))
	if cap(s.dist) < assignPointBlock*chunk {
		s.dist = make([]float32, assignPointBlock*chunk)
	}
	if cap(s.best) < assignPointBlock {
		s.best = make([]float32, assignPointBlock)
	}
	for b0 := lo; b0 < hi; b0 += assignPointBlock {
		b1 := min(b0+assignPointBlock, hi)
		best := s.best[:b1-b0]
		for i := range best {
			best[i] = float32(math.Inf(1))
			labels[b0+i] = 0
		}
		for c0 := 0; c0 < k; c0 += chunk {
			c1 := min(c0+chunk, k)
			rows := cent[c0*d : c1*d]
			for i := b0; i < b1; i++ {
				out := s.dist[:c1-c0]
				simd.L2SqBatch(x[i*d:(i+1)*d], rows, out)
				bi := i - b0
				bd, bl := best[bi], labels[i]
				for c, v := range out {
					if v < bd {
						bd, bl = v, int32(c0+c)
					}
				}
				best[bi], labels[i] = bd, bl
			}
		}
		if dists != nil {
			copy(dists[b0:b1], best)
		}
	}
}

// assignAll is assignRange over all n points of x, in parallel.
func assignAll(x []float32, d int, cent []float32, k int, labels []int32, dists []float32, workers int) {
	assignAllScratch(x, d, cent, k, labels, dists, make([]assignScratch, max(1, workers)), nil)
}

// assignAllScratch is assignAll with one scratch per worker (len(scr)
// workers), kept by the caller across calls: k-means assigns every
// iteration, and fresh scratch each time would add up to many times the
// training sample in allocations over a PQ training's M·25 runs. pace is
// as for parallelForPaced.
func assignAllScratch(x []float32, d int, cent []float32, k int, labels []int32, dists []float32, scr []assignScratch, pace func()) {
	n := len(x) / d
	parallelForPaced(n, len(scr), pace, func(w, lo, hi int) {
		assignRange(x, d, cent, k, lo, hi, labels, dists, &scr[w])
	})
}

// nearest returns the index of the centroid of cent ([k][len(v)]) nearest
// to v (ties to the lower index); dist is scratch of at least k floats.
func nearest(v, cent []float32, dist []float32) int32 {
	k := len(cent) / len(v)
	dist = dist[:k]
	simd.L2SqBatch(v, cent, dist)
	best, bl := dist[0], 0
	for c, x := range dist {
		if x < best {
			best, bl = x, c
		}
	}
	return int32(bl)
}
