package ivfpq

import "math"

// topK is the reference the candidate buffer (candSet) is tested and
// benchmarked against (searches once kept their candidates and their probed
// lists in it). It keeps the cap smallest scores seen, as a binary max-heap so the worst
// kept score is at the root. Parallel arrays avoid interface calls in the
// scan loop.
type topK struct {
	score []float32
	row   []uint32
	limit int
}

func (h *topK) reset(limit int) {
	h.limit = limit
	if cap(h.score) < limit {
		h.score = make([]float32, 0, limit)
		h.row = make([]uint32, 0, limit)
	}
	h.score = h.score[:0]
	h.row = h.row[:0]
}

// worst is the score a candidate must beat to enter: +Inf until full.
func (h *topK) worst() float32 {
	if len(h.score) < h.limit {
		return float32(math.Inf(1))
	}
	return h.score[0]
}

// full reports whether the heap holds limit scores.
func (h *topK) full() bool { return len(h.score) >= h.limit }

// push adds (s, r). REQUIRES: !h.full() or s < h.worst().
func (h *topK) push(s float32, r uint32) {
	if len(h.score) < h.limit {
		h.score = append(h.score, s)
		h.row = append(h.row, r)
		i := len(h.score) - 1
		for i > 0 {
			p := (i - 1) / 2
			if h.score[p] >= h.score[i] {
				break
			}
			h.score[p], h.score[i] = h.score[i], h.score[p]
			h.row[p], h.row[i] = h.row[i], h.row[p]
			i = p
		}
		return
	}
	h.score[0], h.row[0] = s, r
	n := len(h.score)
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		c := l
		if r := l + 1; r < n && h.score[r] > h.score[l] {
			c = r
		}
		if h.score[i] >= h.score[c] {
			break
		}
		h.score[i], h.score[c] = h.score[c], h.score[i]
		h.row[i], h.row[c] = h.row[c], h.row[i]
		i = c
	}
}
