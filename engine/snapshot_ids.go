package engine

import (
	"math"
	"slices"

	"github.com/RoaringBitmap/roaring/v2"
)

// snapIDs is the set of ids a snapshot holds, which every delete checks
// (pinIfHeldLocked). It is built once, from ids in ascending order, and
// never changed. Ids below 2^32 (every id an add without ID gives for the
// first four billion adds) are a 32-bit roaring bitmap: a bit or two each
// when dense, so 256 snapshots of a million memories take some tens of
// megabytes rather than the 2 GiB of 8 bytes an id. Larger ids are a
// sorted slice. (A roaring64 bitmap is slow to build from sparse 63-bit
// ids: see idset.go.)
type snapIDs struct {
	low  *roaring.Bitmap
	high []uint64 // ascending, each > MaxUint32
}

// newSnapIDs builds the set of ids, which must be ascending.
func newSnapIDs(ids []uint64) *snapIDs {
	i, _ := slices.BinarySearch(ids, math.MaxUint32+1)
	low := make([]uint32, i)
	for j, id := range ids[:i] {
		low[j] = uint32(id)
	}
	s := &snapIDs{low: roaring.BitmapOf(low...), high: slices.Clone(ids[i:])}
	s.low.RunOptimize()
	return s
}

func (s *snapIDs) contains(id uint64) bool {
	if s == nil {
		return false
	}
	if id <= math.MaxUint32 {
		return s.low.Contains(uint32(id))
	}
	_, ok := slices.BinarySearch(s.high, id)
	return ok
}
