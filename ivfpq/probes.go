package ivfpq

import (
	"math"
	"math/bits"
	"slices"

	"github.com/memrl/memrl/simd"
)

// listKey packs a list's coarse distance and number into one integer that
// sorts as the pair (distance, list) does: the high 32 bits are the
// distance's orderKey made unsigned (NaN mapped beyond +Inf, so that a NaN
// distance, which no comparison admits, is probed last), the low 32 the
// list. Keys are distinct, which keeps selection and sorting simple.
func listKey(d float32, l int) uint64 {
	k := orderKey(d)
	if d != d {
		k = math.MaxInt32
	}
	return uint64(uint32(k)^1<<31)<<32 | uint64(uint32(l))
}

// selectProbes sets s.probeOrder to the nprobe lists nearest to the query
// by s.coarseDist, nearest first, ties by lower list number.
// REQUIRES: 1 <= nprobe <= nlist; s.coarseDist holds nlist distances.
//
// It selects among the keys of the lists within probeBound's distance,
// or, when that offers no bound, among streamKeys'.
func (s *searchScratch) selectProbes(nlist, nprobe int) {
	if cap(s.listKeys) < 2*nprobe {
		s.listKeys = make([]uint64, 0, 2*nprobe)
	}
	keys := s.listKeys[:0]
	if b, ok := s.probeBound(nlist, nprobe); ok {
		// Every list among the nprobe nearest is at most b away, and
		// about 1.4·nprobe lists are: simd.MaskLE compares them eight
		// at a time and only the bits of those within b are walked
		// (NaN compares false: such a list is never needed, as nprobe
		// lists have a number for a distance).
		if cap(s.listMask) < (nlist+31)/32 {
			s.listMask = make([]uint32, (nlist+31)/32)
		}
		masks := s.listMask[:(nlist+31)/32]
		simd.MaskLE(s.coarseDist[:nlist], b, masks)
		for w, mask := range masks {
			for mask != 0 {
				l := w*32 + bits.TrailingZeros32(mask)
				mask &= mask - 1
				keys = append(keys, listKey(s.coarseDist[l], l))
			}
		}
	} else {
		keys = s.streamKeys(nlist, nprobe, keys)
	}
	if len(keys) > nprobe {
		selectKeys(keys, nprobe)
		keys = keys[:nprobe]
	}
	slices.Sort(keys)
	s.listKeys = keys
	s.probeOrder = s.probeOrder[:0]
	for _, k := range keys {
		s.probeOrder = append(s.probeOrder, int(uint32(k)))
	}
}

// probeBound returns a distance b such that the nprobe nearest lists are
// all at most b from the query, and at least nprobe lists are, and true;
// or false when it has none to offer cheaply (nprobe above nlist/8, or a
// NaN or +Inf among the representatives it picks).
//
// It deals the lists into g = 2·nprobe groups, list l to group l mod g,
// and takes a representative distance of each, its smallest (nearly); b
// is the largest of the nprobe smallest representatives. They are
// distances of nprobe different lists, so the nprobe-th nearest list is
// no farther than b. Dealt rather than cut into runs of consecutive
// numbers so that a query's nearest lists would not crowd into a few
// groups were they numbered near each other (k-means starts from a random
// permutation, so they are not, but nothing requires it). About
// 1.4·nprobe lists pass b (for 36 of 2048 lists, a group's minimum of 28:
// the median minimum is at the 2.4% quantile, 50 lists).
//
// Why: streamKeys admits a key, a branch it cannot predict, for every
// list that beats its bound, which is loose until it has met the nearest
// lists, and selects among its buffer every nprobe admissions: choosing
// 36 of 2048 lists took 9.4 us a query on sift1m-deb's queries with it,
// 6.2 with this bound first (BenchmarkSelectProbes: 8.5 and 4.0 us on
// distances in random order; in runs, where streamKeys is at its worst,
// 15.7 and 3.4). The representatives take one pass with no branch
// (simd.MinBits, eight lanes at a time), the bound one selection over
// 2·nprobe.
func (s *searchScratch) probeBound(nlist, nprobe int) (float32, bool) {
	g := 2 * nprobe
	if g*4 > nlist {
		return 0, false
	}
	if cap(s.groupMin) < g {
		s.groupMin = make([]int32, g)
	}
	// A group's representative is its smallest distance by the float's
	// bits read as an integer: the float order for distances of either
	// sign against the other and among positive ones (nearly all: only
	// rounding makes a distance negative). Any member would do for the
	// bound, which needs distances of nprobe different lists; the
	// smallest makes it tight, and an integer minimum is one instruction
	// with no branch.
	reps := s.groupMin[:g]
	for i := range reps {
		reps[i] = math.MaxInt32
	}
	d := s.coarseDist[:nlist]
	for lo := 0; lo < nlist; lo += g {
		simd.MinBits(reps, d[lo:min(lo+g, nlist)])
	}
	// The nprobe smallest representatives, by selectKeys: each key is a
	// representative made unsigned (order kept) over its group number,
	// so that keys are distinct.
	keys := s.listKeys[:0]
	for i, r := range reps {
		keys = append(keys, uint64(uint32(r)^1<<31)<<32|uint64(i))
	}
	selectKeys(keys, nprobe)
	b := float32(math.Inf(-1))
	for _, k := range keys[:nprobe] {
		x := math.Float32frombits(uint32(k>>32) ^ 1<<31)
		if x != x || math.IsInf(float64(x), 1) {
			return 0, false // a NaN is no list's distance; +Inf bounds nothing
		}
		b = max(b, x)
	}
	return b, true
}

// streamKeys appends to keys those of the nprobe nearest lists, among at
// most 2·nprobe keys.
//
// Keys below a bound go to a buffer of 2·nprobe that is cut back to the
// nprobe smallest when full (the candidate buffer's scheme, cands.go); the
// bound is then the largest key kept, so after the first few hundred lists
// almost every key is turned away by one well-predicted comparison.
//
// Why not a heap: with nprobe 128 of 2048 lists about 500 lists enter a
// 128-entry heap, each push a chain of dependent loads and mispredicted
// branches; that was 10% of a search at 1M (IVF2048,PQ48x4, nprobe 128,
// refine 48), plus 3% for sorting the result through a comparison
// function. Nor one quickselect over all the keys: its partition loop
// reads the slot it wrote one step before, a store-to-load chain that made
// it 10% of a search at nprobe 32.
func (s *searchScratch) streamKeys(nlist, nprobe int, keys []uint64) []uint64 {
	bound := uint64(math.MaxUint64)
	dbound := float32(math.Inf(1)) // the distance in bound's key
	for l, d := range s.coarseDist[:nlist] {
		// A distance above the bound's cannot make a smaller key; this
		// float comparison turns most lists away before a key is formed
		// (NaN compares false and goes on to its key, which is the
		// largest).
		if d > dbound {
			continue
		}
		key := listKey(d, l)
		if key >= bound {
			continue
		}
		keys = append(keys, key)
		if len(keys) == 2*nprobe {
			selectKeys(keys, nprobe)
			keys = keys[:nprobe]
			bound = slices.Max(keys)
			dbound = s.coarseDist[uint32(bound)]
		}
	}
	return keys
}

// allListsNearestFirst returns every list, nearest to the query first, in
// selectProbes' order. REQUIRES: s.coarseDist holds nlist distances.
func (s *searchScratch) allListsNearestFirst(nlist int) []int {
	keys := s.listKeys[:0]
	for l, d := range s.coarseDist[:nlist] {
		keys = append(keys, listKey(d, l))
	}
	slices.Sort(keys)
	s.listKeys = keys
	order := s.order[:0]
	for _, k := range keys {
		order = append(order, int(uint32(k)))
	}
	s.order = order
	return order
}

// selectKeys reorders a so that a[:k] holds its k smallest keys, in no
// particular order. REQUIRES: the keys are distinct; 0 < k <= len(a).
func selectKeys(a []uint64, k int) {
	lo, hi := 0, len(a) // INVARIANT: a[:lo] are below, a[hi:] above, every key in a[lo:hi]
	for hi-lo > 16 {
		// The median of three as pivot, moved to a[hi-1].
		mid := int(uint(lo+hi) >> 1)
		if a[mid] < a[lo] {
			a[mid], a[lo] = a[lo], a[mid]
		}
		if a[hi-1] < a[mid] {
			a[hi-1], a[mid] = a[mid], a[hi-1]
			if a[mid] < a[lo] {
				a[mid], a[lo] = a[lo], a[mid]
			}
		}
		a[mid], a[hi-1] = a[hi-1], a[mid]
		p := a[hi-1]
		// Lomuto partition of a[lo:hi-1] around p, swapping every element
		// so that the only data-dependent step is the index increment
		// (a conditional add, not a branch to mispredict).
		j := lo
		for i := lo; i < hi-1; i++ {
			x := a[i]
			a[i] = a[j]
			a[j] = x
			if x < p {
				j++
			}
		}
		a[j], a[hi-1] = p, a[j] // a[lo:j] < a[j] = p < a[j+1:hi]
		switch {
		case k <= j:
			hi = j
		case k == j+1:
			return
		default:
			lo = j + 1
		}
	}
	slices.Sort(a[lo:hi])
}
