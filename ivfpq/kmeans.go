package ivfpq

import (
	"fmt"
	"math/rand"
)

// kmeansConfig controls one k-means run.
type kmeansConfig struct {
	k              int   // number of centroids
	niter          int   // Lloyd iterations
	maxPerCentroid int   // the training set is subsampled to at most k*maxPerCentroid points
	workers        int   // goroutines for assignment and update
	seed           int64 // random start and subsample
}

// kmeans clusters the n points of x ([n][d]) into cfg.k centroids and
// returns them ([k][d]).
//
// The start is k distinct points drawn at random (k-means++ costs as much as
// a full iteration per centroid chosen, and with a subsample of at most
// maxPerCentroid points per centroid plus empty-cluster splitting a random
// start converges to the same quality). A cluster that ends an iteration empty
// is re-seeded by splitting a large one (picked with probability proportional
// to its size) into two slightly perturbed copies, as FAISS does.
//
// REQUIRES: n >= k.
func kmeans(x []float32, d int, cfg kmeansConfig) ([]float32, error) {
	n := len(x) / d
	k := cfg.k
	if n < k {
		return nil, fmt.Errorf("%w: k-means needs at least %d training points, got %d", ErrBadParams, k, n)
	}
	rng := rand.New(rand.NewSource(cfg.seed))
	if cfg.maxPerCentroid > 0 && n > k*cfg.maxPerCentroid {
		x = subsample(x, d, k*cfg.maxPerCentroid, rng)
		n = len(x) / d
	}

	cent := make([]float32, k*d)
	perm := rng.Perm(n)
	for c := 0; c < k; c++ {
		copy(cent[c*d:(c+1)*d], x[perm[c]*d:(perm[c]+1)*d])
	}
	if n == k {
		return cent, nil
	}

	workers := max(1, cfg.workers)
	labels := make([]int32, n)
	// Per-worker float64 sums: float32 would lose precision on large clusters.
	sums := make([][]float64, workers)
	counts := make([][]int, workers)
	for w := range sums {
		sums[w] = make([]float64, k*d)
		counts[w] = make([]int, k)
	}
	size := make([]int, k)
	for it := 0; it < cfg.niter; it++ {
		assignAll(x, d, cent, k, labels, nil, workers)
		parallelFor(n, workers, func(w, lo, hi int) {
			s, cnt := sums[w], counts[w]
			clear(s)
			clear(cnt)
			for i := lo; i < hi; i++ {
				c := int(labels[i])
				cnt[c]++
				row := s[c*d : (c+1)*d]
				for j, v := range x[i*d : (i+1)*d] {
					row[j] += float64(v)
				}
			}
		})
		parallelFor(k, workers, func(_, lo, hi int) {
			for c := lo; c < hi; c++ {
				total := 0
				for w := range counts {
					total += counts[w][c]
				}
				size[c] = total
				if total == 0 {
					continue
				}
				inv := 1 / float64(total)
				row := cent[c*d : (c+1)*d]
				for j := range row {
					var s float64
					for w := range sums {
						s += sums[w][c*d+j]
					}
					row[j] = float32(s * inv)
				}
			}
		})
		splitEmpty(cent, d, size, n, rng)
	}
	return cent, nil
}

// splitEmpty re-seeds every empty cluster by splitting a populous one.
func splitEmpty(cent []float32, d int, size []int, n int, rng *rand.Rand) {
	const eps = 1.0 / 1024
	k := len(size)
	for ci := 0; ci < k; ci++ {
		if size[ci] != 0 {
			continue
		}
		// Pick cj with probability (size[cj]-1)/(n-k) by rejection sampling.
		cj := 0
		for {
			cj = rng.Intn(k)
			if size[cj] > 1 && float64(rng.Intn(n-k+1)) < float64(size[cj]-1) {
				break
			}
		}
		a, b := cent[ci*d:(ci+1)*d], cent[cj*d:(cj+1)*d]
		copy(a, b)
		for j := range a {
			if j%2 == 0 {
				a[j] *= 1 + eps
				b[j] *= 1 - eps
			} else {
				a[j] *= 1 - eps
				b[j] *= 1 + eps
			}
		}
		size[ci] = size[cj] / 2
		size[cj] -= size[ci]
	}
}

// subsample returns m distinct points of x ([n][d]) chosen at random, copied.
func subsample(x []float32, d, m int, rng *rand.Rand) []float32 {
	n := len(x) / d
	perm := rng.Perm(n)[:m]
	out := make([]float32, m*d)
	for i, p := range perm {
		copy(out[i*d:(i+1)*d], x[p*d:(p+1)*d])
	}
	return out
}
