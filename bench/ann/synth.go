package ann

import (
	"math/rand"
	"runtime"
	"sort"
	"sync"
)

// synthetic makes a clustered data set for quick runs: n base vectors, nq
// queries and nlearn training vectors of dimension dim drawn around
// n/100 random centres (unit spread around centres spread 5 apart), with
// exact L2 ground truth of depth k computed by brute force.
func synthetic(n, nq, nlearn, dim, k int, seed int64) (base, queries, learn []float32, gt [][]int32) {
	rng := rand.New(rand.NewSource(seed))
	nc := max(1, n/100)
	centres := make([]float32, nc*dim)
	for i := range centres {
		centres[i] = float32(rng.NormFloat64() * 5)
	}
	gen := func(m int) []float32 {
		x := make([]float32, m*dim)
		for i := 0; i < m; i++ {
			c := rng.Intn(nc)
			for j := 0; j < dim; j++ {
				x[i*dim+j] = centres[c*dim+j] + float32(rng.NormFloat64())
			}
		}
		return x
	}
	base, queries, learn = gen(n), gen(nq), gen(nlearn)
	gt = bruteForceL2(base, queries, dim, k)
	return base, queries, learn, gt
}

// bruteForceL2 returns the exact top-k rows of base for each query, by L2.
func bruteForceL2(base, queries []float32, dim, k int) [][]int32 {
	n, nq := len(base)/dim, len(queries)/dim
	gt := make([][]int32, nq)
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < runtime.NumCPU(); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			type c struct {
				d   float32
				row int32
			}
			cs := make([]c, n)
			for qi := range next {
				q := queries[qi*dim : (qi+1)*dim]
				for i := 0; i < n; i++ {
					var s float32
					for j, a := range q {
						e := a - base[i*dim+j]
						s += e * e
					}
					cs[i] = c{s, int32(i)}
				}
				sort.Slice(cs, func(a, b int) bool {
					if cs[a].d != cs[b].d {
						return cs[a].d < cs[b].d
					}
					return cs[a].row < cs[b].row
				})
				row := make([]int32, min(k, n))
				for i := range row {
					row[i] = cs[i].row
				}
				gt[qi] = row
			}
		}()
	}
	for qi := 0; qi < nq; qi++ {
		next <- qi
	}
	close(next)
	wg.Wait()
	return gt
}
