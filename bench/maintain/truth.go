package maintain

import (
	"runtime"
	"slices"
	"sync"
)

// The ground truth of each step: the exact 10 nearest live memories of
// every query (squared L2, ties to the lower id), by brute force. On SIFT's
// byte-valued vectors float32 sums of squares are exact (at most 128·255²,
// below 2^24), so there is no rounding in the comparison.

// neighbour is a candidate of a top 10.
type neighbour struct {
	d  float32
	id int64
}

// top10 keeps the 10 nearest seen, best first.
type top10 []neighbour

func (t *top10) offer(d float32, id int64) {
	s := *t
	if len(s) == 10 && !less(neighbour{d, id}, s[9]) {
		return
	}
	i := len(s)
	if i < 10 {
		s = append(s, neighbour{})
	} else {
		i = 9
	}
	for i > 0 && less(neighbour{d, id}, s[i-1]) {
		s[i] = s[i-1]
		i--
	}
	s[i] = neighbour{d, id}
	*t = s
}

func less(a, b neighbour) bool { return a.d < b.d || a.d == b.d && a.id < b.id }

// exactTop10 returns, for each query, the ids of its 10 nearest among ids
// (vec gives an id's vector), best first. The ids are split among the
// processors; each scans its share once for all the queries (the vector
// stays in cache while every query is compared with it), then the shares'
// top 10s are merged.
func exactTop10(queries [][]float32, ids []int64, vec func(id int64) []float32) [][]int64 {
	workers := max(1, min(runtime.GOMAXPROCS(0), len(ids)/1024+1))
	parts := make([][]top10, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tops := make([]top10, len(queries))
			for i := range tops {
				tops[i] = make(top10, 0, 10)
			}
			for _, id := range ids[w*len(ids)/workers : (w+1)*len(ids)/workers] {
				v := vec(id)
				for qi, q := range queries {
					tops[qi].offer(sqDist(q, v), id)
				}
			}
			parts[w] = tops
		}()
	}
	wg.Wait()
	out := make([][]int64, len(queries))
	for qi := range queries {
		all := make(top10, 0, 10)
		for _, p := range parts {
			for _, nb := range p[qi] {
				all.offer(nb.d, nb.id)
			}
		}
		ids := make([]int64, len(all))
		for i, nb := range all {
			ids[i] = nb.id
		}
		out[qi] = ids
	}
	return out
}

func sqDist(a, b []float32) float32 {
	var s float32
	for i := range a {
		d := a[i] - b[i]
		s += d * d
	}
	return s
}

// hits counts how many of got are in want.
func hits(want, got []int64) int {
	h := 0
	for _, id := range got {
		if slices.Contains(want, id) {
			h++
		}
	}
	return h
}
