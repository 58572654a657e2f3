package filter

import (
	"math"
	"sort"

	"github.com/RoaringBitmap/roaring/v2"
)

// Numeric values are indexed by bucket. A bucket holds the numbers whose
// float64 bits agree in the sign, the 11 exponent bits and the top
// bucketMantissaBits bits of the mantissa: every binade [2^e, 2^(e+1)) is
// cut into 2^16 equal buckets, so a bucket is 2^-16 (0.0015%) of its
// values wide, whatever their scale:
//
//   - counts and small enums: integers below 2^17 (131,072) get one
//     bucket each, so equality and ranges over them are exact;
//   - Unix timestamps: seconds (about 2^30.7 today) fall in buckets of
//     2^14 s (4.5 hours), milliseconds in buckets of 2^24 ms (4.7 hours),
//     so a range of a day touches a handful of buckets;
//   - scores in [0, 1): 2^16 buckets per binade, a few hundred thousand in
//     all at most.
//
// Each bucket remembers the least and greatest value added to it: a bucket
// whose [min, max] lies inside a range is taken whole (exactly), one that
// straddles the range's end is a candidate whose rows must be checked, one
// outside it is skipped. Removing rows leaves min and max as they were, a
// wider bound than needed but never a wrong one.
const bucketMantissaBits = 16

// bucketKey maps a number to its bucket, preserving order: a < b implies
// bucketKey(a) <= bucketKey(b). -0 and +0 share a bucket.
func bucketKey(v float64) uint32 {
	if v == 0 {
		v = 0 // -0 to +0
	}
	bits := math.Float64bits(v)
	if bits>>63 != 0 {
		bits = ^bits // negative: larger magnitude sorts first
	} else {
		bits |= 1 << 63
	}
	return uint32(bits >> (52 - bucketMantissaBits))
}

// bucket is the rows whose value falls in one bucket. A bucket of one row
// keeps the row in one, not in a bitmap (a roaring bitmap of one row costs
// about 150 bytes: see postings).
type bucket struct {
	key      uint32
	one      uint32          // the bucket's only row, while rows is nil
	min, max float64         // INVARIANT: every value of a row in the bucket is in [min, max]
	rows     *roaring.Bitmap // the rows, once a second row came; nil before
}

// bitmap returns the bucket's rows, read-only.
func (b *bucket) bitmap() *roaring.Bitmap {
	if b.rows == nil {
		return roaring.BitmapOf(b.one)
	}
	return b.rows
}

// numIndex is a field's numeric values, by bucket.
type numIndex struct {
	buckets []*bucket // sorted by key
}

// find returns the position of key in buckets, or where it would go.
func (x *numIndex) find(key uint32) (int, bool) {
	i := sort.Search(len(x.buckets), func(i int) bool { return x.buckets[i].key >= key })
	return i, i < len(x.buckets) && x.buckets[i].key == key
}

// add adds row under v and returns the change of sizeInBytes.
func (x *numIndex) add(v float64, row uint32) int64 {
	key := bucketKey(v)
	i, ok := x.find(key)
	if !ok {
		b := &bucket{key: key, one: row, min: v, max: v}
		x.buckets = append(x.buckets, nil)
		copy(x.buckets[i+1:], x.buckets[i:])
		x.buckets[i] = b
		return bucketBytes
	}
	b := x.buckets[i]
	b.min, b.max = min(b.min, v), max(b.max, v)
	switch {
	case b.rows != nil:
		return bitmapAdd(b.rows, row)
	case b.one != row:
		b.rows = roaring.BitmapOf(b.one, row)
		return manyEntryBytes + int64(b.rows.GetSizeInBytes())
	}
	return 0
}

// remove removes row from v's bucket and returns the change of
// sizeInBytes.
func (x *numIndex) remove(v float64, row uint32) int64 {
	i, ok := x.find(bucketKey(v))
	if !ok {
		return 0
	}
	b := x.buckets[i]
	if b.rows == nil {
		if b.one == row {
			x.buckets = append(x.buckets[:i], x.buckets[i+1:]...)
			return -bucketBytes
		}
		return 0
	}
	d := bitmapRemove(b.rows, row)
	switch b.rows.GetCardinality() {
	case 0:
		d -= manyEntryBytes + int64(b.rows.GetSizeInBytes()) + bucketBytes
		x.buckets = append(x.buckets[:i], x.buckets[i+1:]...)
	case 1:
		d -= manyEntryBytes + int64(b.rows.GetSizeInBytes())
		b.one, b.rows = b.rows.Minimum(), nil
	}
	return d
}

// cmp returns the rows with a value v such that `v op c` holds: lo is the
// rows known to (buckets wholly inside), hi the rows that may (lo plus the
// buckets that straddle); the same bitmap when no bucket straddles. op is
// opEq, opLt, opLe, opGt or opGe. The bitmaps are read-only: they may be
// the index's own.
func (x *numIndex) cmp(op opcode, c float64) (lo, hi *roaring.Bitmap) {
	if math.IsNaN(c) {
		empty := roaring.New() // every comparison with NaN is false
		return empty, empty
	}
	pred := func(v float64) bool {
		switch op {
		case opEq:
			return v == c
		case opLt:
			return v < c
		case opLe:
			return v <= c
		case opGt:
			return v > c
		}
		return v >= c
	}
	// The buckets to look at: from..to-1.
	from, to := 0, len(x.buckets)
	key := bucketKey(c)
	switch op {
	case opEq:
		i, ok := x.find(key)
		from, to = i, i
		if ok {
			to = i + 1
		}
	case opLt, opLe:
		i, ok := x.find(key)
		to = i
		if ok {
			to = i + 1
		}
	default:
		from, _ = x.find(key)
	}
	var los, his []*roaring.Bitmap
	for _, b := range x.buckets[from:to] {
		switch inMin, inMax := pred(b.min), pred(b.max); {
		case inMin && inMax && (op != opEq || b.min == b.max):
			rows := b.bitmap()
			los = append(los, rows)
			his = append(his, rows)
		case inMin || inMax || op == opEq && b.min <= c && c <= b.max:
			his = append(his, b.bitmap())
		}
	}
	lo = orAll(los)
	if len(los) == len(his) {
		return lo, lo
	}
	return lo, orAll(his)
}

// bucketBytes estimates what a bucket costs besides its bitmap: the
// bucket, its pointer and the slice's spare capacity.
const bucketBytes = 48

// sizeInBytes estimates the heap the buckets hold.
func (x *numIndex) sizeInBytes() int64 {
	n := int64(len(x.buckets)) * bucketBytes
	for _, b := range x.buckets {
		if b.rows != nil {
			n += manyEntryBytes + int64(b.rows.GetSizeInBytes())
		}
	}
	return n
}

func (x *numIndex) optimize() {
	for _, b := range x.buckets {
		if b.rows != nil {
			b.rows.RunOptimize()
		}
	}
}
