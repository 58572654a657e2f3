package ivfpq

import (
	"math"
	"slices"
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
func (s *searchScratch) selectProbes(nlist, nprobe int) {
	if cap(s.listKeys) < 2*nprobe {
		s.listKeys = make([]uint64, 0, 2*nprobe)
	}
	keys := s.listKeys[:0]
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
