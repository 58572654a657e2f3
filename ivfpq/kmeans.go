package ivfpq

import (
	"fmt"
	"math/rand"
)

// kmeansConfig controls one k-means run.
type kmeansConfig struct {
	k              int    // number of centroids
	niter          int    // Lloyd iterations
	maxPerCentroid int    // the training set is subsampled to at most k*maxPerCentroid points
	workers        int    // goroutines for assignment and update
	seed           int64  // random start and subsample
	pace           func() // called between blocks of work on one worker (parallelForPaced); may be nil
}

// kmeansScratch is k-means working memory, reusable across runs: PQ
// training runs k-means once per sub-space, and fresh buffers for each run
// would add up to many times the training sample.
type kmeansScratch struct {
	perm   []int32
	labels []int32
	order  []int32 // points bucketed by cluster
	start  []int   // [k+1]: cluster c's points are order[start[c]:start[c+1]]
	fill   []int
	size   []int
	acc    [][]float64 // per worker: one cluster's float64 sum
	assign []assignScratch
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// kmeans clusters the n points of x ([n][d]) into cfg.k centroids and
// returns them ([k][d]).
func kmeans(x []float32, d int, cfg kmeansConfig) ([]float32, error) {
	cent := make([]float32, cfg.k*d)
	if err := kmeansInto(x, d, cfg, cent, &kmeansScratch{}); err != nil {
		return nil, err
	}
	return cent, nil
}

// kmeansInto is kmeans writing the centroids to cent ([k][d]) and working
// in ks.
//
// The start is k distinct points drawn at random (k-means++ costs as much as
// a full iteration per centroid chosen, and with a subsample of at most
// maxPerCentroid points per centroid plus empty-cluster splitting a random
// start converges to the same quality). A cluster that ends an iteration empty
// is re-seeded by splitting a large one (picked with probability proportional
// to its size) into two slightly perturbed copies, as FAISS does.
//
// Memory: besides ks (about 20 bytes a point, one float64 row a worker),
// only a subsample copy when x holds more than k·maxPerCentroid points.
//
// REQUIRES: n >= k; len(cent) == k*d.
func kmeansInto(x []float32, d int, cfg kmeansConfig, cent []float32, ks *kmeansScratch) error {
	n := len(x) / d
	k := cfg.k
	if n < k {
		return fmt.Errorf("%w: k-means needs at least %d training points, got %d", ErrBadParams, k, n)
	}
	rng := rand.New(rand.NewSource(cfg.seed))
	if cfg.maxPerCentroid > 0 && n > k*cfg.maxPerCentroid {
		x = subsample(x, d, k*cfg.maxPerCentroid, rng)
		n = len(x) / d
	}

	// rng.Perm(n), without its []int.
	perm := grow(ks.perm, n)
	ks.perm = perm
	for i := 0; i < n; i++ {
		j := rng.Intn(i + 1)
		perm[i] = perm[j]
		perm[j] = int32(i)
	}
	for c := 0; c < k; c++ {
		p := int(perm[c])
		copy(cent[c*d:(c+1)*d], x[p*d:(p+1)*d])
	}
	if n == k {
		return nil
	}

	workers := max(1, cfg.workers)
	// The update step sums each cluster's points in float64 (float32 would
	// lose precision on large clusters). Points are bucketed by cluster (a
	// counting sort of the labels) and workers split the clusters, so the
	// sums take one float64 row per worker, not a [k][d]float64 table per
	// worker: that table, NList·Dim·8 bytes a worker, was once the larger
	// part of training memory for large dims.
	labels := grow(ks.labels, n)
	order := grow(ks.order, n)
	start := grow(ks.start, k+1)
	fill := grow(ks.fill, k)
	size := grow(ks.size, k)
	ks.labels, ks.order, ks.start, ks.fill, ks.size = labels, order, start, fill, size
	for len(ks.acc) < workers {
		ks.acc = append(ks.acc, nil)
	}
	for w := 0; w < workers; w++ {
		ks.acc[w] = grow(ks.acc[w], d)
	}
	for len(ks.assign) < workers {
		ks.assign = append(ks.assign, assignScratch{})
	}
	acc, scr := ks.acc, ks.assign[:workers]
	start[0] = 0
	for it := 0; it < cfg.niter; it++ {
		assignAllScratch(x, d, cent, k, labels, nil, scr, cfg.pace)
		clear(size)
		for _, l := range labels {
			size[l]++
		}
		for c := 0; c < k; c++ {
			start[c+1] = start[c] + size[c]
		}
		copy(fill, start[:k])
		for i, l := range labels {
			order[fill[l]] = int32(i)
			fill[l]++
		}
		parallelForPaced(k, workers, cfg.pace, func(w, lo, hi int) {
			sum := acc[w]
			for c := lo; c < hi; c++ {
				if size[c] == 0 {
					continue
				}
				clear(sum)
				for _, i := range order[start[c]:start[c+1]] {
					for j, v := range x[int(i)*d : (int(i)+1)*d] {
						sum[j] += float64(v)
					}
				}
				inv := 1 / float64(size[c])
				row := cent[c*d : (c+1)*d]
				for j := range row {
					row[j] = float32(sum[j] * inv)
				}
			}
		})
		splitEmpty(cent, d, size, n, rng)
	}
	return nil
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
