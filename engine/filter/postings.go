package filter

import (
	"strings"

	"github.com/RoaringBitmap/roaring/v2"
)

// postings maps string values to the rows that hold them.
//
// Why two maps: a value held by one row is the common case for arrays of
// ids and tags, and a roaring bitmap of one row costs about 150 bytes (the
// bitmap, its three slices and a container), so an index of such arrays
// took about 30 times the attributes' bytes (issue 26: 18.9 MB of
// attributes, 573 MB of heap). A value held by one row keeps just the row,
// in one; it moves to a bitmap in many when a second row takes it, and
// back when all but one leave.
//
// INVARIANT: a value is in at most one of the maps; every bitmap in many
// holds at least two rows.
type postings struct {
	one  map[string]uint32          // values held by exactly one row: that row
	many map[string]*roaring.Bitmap // values held by two rows or more
}

func newPostings() postings {
	return postings{one: map[string]uint32{}, many: map[string]*roaring.Bitmap{}}
}

// len is the number of distinct values.
func (p *postings) len() int { return len(p.one) + len(p.many) }

// add adds row to s's rows and returns the change of sizeInBytes. s may
// alias attributes (jsonString): a new key is copied.
func (p *postings) add(s string, row uint32) int64 {
	if b := p.many[s]; b != nil {
		return bitmapAdd(b, row)
	}
	r, ok := p.one[s]
	switch {
	case !ok:
		p.one[strings.Clone(s)] = row
		return oneEntryBytes + keyBytes(s)
	case r != row:
		delete(p.one, s)
		b := roaring.BitmapOf(r, row)
		p.many[strings.Clone(s)] = b
		return manyEntryBytes + int64(b.GetSizeInBytes()) - oneEntryBytes
	}
	return 0
}

// remove removes row from s's rows, forgetting s once no row holds it (so
// that values no row holds any more cost nothing), and returns the change
// of sizeInBytes.
func (p *postings) remove(s string, row uint32) int64 {
	if r, ok := p.one[s]; ok {
		if r == row {
			delete(p.one, s)
			return -oneEntryBytes - keyBytes(s)
		}
		return 0
	}
	b := p.many[s]
	if b == nil {
		return 0
	}
	d := bitmapRemove(b, row)
	if b.GetCardinality() > 1 {
		return d
	}
	d -= manyEntryBytes + int64(b.GetSizeInBytes())
	delete(p.many, s)
	if b.IsEmpty() {
		return d - keyBytes(s)
	}
	p.one[strings.Clone(s)] = b.Minimum()
	return d + oneEntryBytes
}

// bitmapAdd adds row to b and returns the change of b's GetSizeInBytes.
func bitmapAdd(b *roaring.Bitmap, row uint32) int64 {
	before := b.GetSizeInBytes()
	b.Add(row)
	return int64(b.GetSizeInBytes()) - int64(before)
}

// bitmapRemove removes row from b and returns the change of b's
// GetSizeInBytes.
func bitmapRemove(b *roaring.Bitmap, row uint32) int64 {
	before := b.GetSizeInBytes()
	b.Remove(row)
	return int64(b.GetSizeInBytes()) - int64(before)
}

// get returns s's rows, read-only (an empty bitmap for none).
func (p *postings) get(s string) *roaring.Bitmap {
	if b := p.many[s]; b != nil {
		return b
	}
	if r, ok := p.one[s]; ok {
		return roaring.BitmapOf(r)
	}
	return roaring.New()
}

// lookup is get that reports whether any row holds s.
func (p *postings) lookup(s string) (*roaring.Bitmap, bool) {
	if b := p.many[s]; b != nil {
		return b, true
	}
	if r, ok := p.one[s]; ok {
		return roaring.BitmapOf(r), true
	}
	return nil, false
}

// each calls fn for every value and its rows (read-only) until fn returns
// false.
func (p *postings) each(fn func(s string, rows *roaring.Bitmap) bool) {
	for s, b := range p.many {
		if !fn(s, b) {
			return
		}
	}
	for s, r := range p.one {
		if !fn(s, roaring.BitmapOf(r)) {
			return
		}
	}
}

// eachValue calls fn for every value until fn returns false, without
// making bitmaps.
func (p *postings) eachValue(fn func(s string) bool) {
	for s := range p.many {
		if !fn(s) {
			return
		}
	}
	for s := range p.one {
		if !fn(s) {
			return
		}
	}
}

func (p *postings) optimize() {
	for _, b := range p.many {
		b.RunOptimize()
	}
}

// Estimates of what the maps' entries cost besides the bitmaps and the
// keys' bytes: a slot (key header and value, with the map's unused slots)
// and a bitmap's fixed part. Measured by TestIndexArrayMemory.
const (
	oneEntryBytes  = 28
	manyEntryBytes = 112
)

// sizeInBytes estimates the heap the postings hold. It walks them all:
// add and remove return its changes, for Index.SizeInBytes to follow.
func (p *postings) sizeInBytes() int64 {
	var n int64
	for s := range p.one {
		n += oneEntryBytes + keyBytes(s)
	}
	for s, b := range p.many {
		n += manyEntryBytes + keyBytes(s) + int64(b.GetSizeInBytes())
	}
	return n
}

// keyBytes is the allocation holding a key of len(s) bytes: rounded up to
// 8 (the small size classes).
func keyBytes(s string) int64 { return (int64(len(s)) + 7) &^ 7 }
