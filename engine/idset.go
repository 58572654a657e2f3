package engine

import (
	"math"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/google/btree"
)

// idSet is a collection's set of live ids, ordered, for scans (scan.go).
//
// Ids below 2^32 — every id an add without ID gives for the first four
// billion adds — are kept in a 32-bit roaring bitmap: a bit or two each
// when dense, a few bytes when sparse, and cheap to add. Larger ids (an
// explicit ID, such as a hash) are kept in a B-tree: O(log n) to add,
// some 10-20 bytes each. A roaring64 bitmap alone was tried first: an id
// whose upper 32 bits are new inserts into a sorted array of them, so 1M
// random 63-bit ids took 265 s to add (O(n) each) and 158 bytes each.
//
// It is not safe for concurrent use: the collection's lock guards it.
type idSet struct {
	low  *roaring.Bitmap       // ids < 2^32
	high *btree.BTreeG[uint64] // ids >= 2^32
}

func newIDSet() *idSet {
	return &idSet{low: roaring.New(), high: btree.NewOrderedG[uint64](32)}
}

func (s *idSet) add(id uint64) {
	if id <= math.MaxUint32 {
		s.low.Add(uint32(id))
	} else {
		s.high.ReplaceOrInsert(id)
	}
}

func (s *idSet) remove(id uint64) {
	if id <= math.MaxUint32 {
		s.low.Remove(uint32(id))
	} else {
		s.high.Delete(id)
	}
}

func (s *idSet) len() int { return int(s.low.GetCardinality()) + s.high.Len() }

// ascend calls fn with each id at least from, in increasing order, until
// fn returns false. The cost before the first id is a binary search of the
// B-tree or a skip over the bitmap's containers (one per 2^16 ids) below
// from, not a walk of the ids below it.
func (s *idSet) ascend(from uint64, fn func(id uint64) bool) {
	if from <= math.MaxUint32 {
		it := s.low.Iterator()
		it.AdvanceIfNeeded(uint32(from))
		for it.HasNext() {
			if !fn(uint64(it.Next())) {
				return
			}
		}
		from = math.MaxUint32 + 1
	}
	s.high.AscendGreaterOrEqual(from, fn)
}
