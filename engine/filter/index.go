package filter

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"
)

// Index is a bitmap index over rows (uint32: a collection's row numbers)
// for a set of declared fields: for each field, the rows by the type of
// its value, the rows by string value, the rows by number (in buckets, see
// buckets.go), and the same for the elements of array values (so
// `"plan" in .tags` is one bitmap). Plan uses it to narrow an expression to
// the rows that can match.
//
// An Index is not safe for concurrent use: the caller serializes every
// call (the collection's lock). It is not persisted either: it holds only
// what the attributes already say, and is rebuilt from them when the
// collection opens (AddField per declared field, or Add per row).
//
// The caller keeps it in step with the attributes: Add a row's attributes
// when it gets them, Remove exactly those attributes before they change or
// the row goes. Attributes given to Add and Remove must be ones
// ValidateAttrs accepted (in particular, without duplicate keys).
type Index struct {
	fields map[string]*fieldIndex
	// size is SizeInBytes, kept up to date by every change (measure
	// computes it afresh), so that reading it costs nothing.
	size int64
}

// fieldIndex is one declared field's postings.
type fieldIndex struct {
	// Rows whose value for the field is a number (booleans included), a
	// string, an array. Rows where the field is missing, null or an object
	// are in none.
	hasNum, hasStr, hasArr *roaring.Bitmap
	strs                   postings // rows whose value is this string
	nums                   numIndex // rows whose value is a number, by bucket
	elemStrs               postings // rows whose array holds this string
	elemNums               numIndex // rows whose array holds a number, by bucket
	// path is the field's name split at its dots when it is a path into
	// nested objects ("meta.source"), nil for a top-level field.
	path []string
}

// Errors of Index.AddField.
var (
	// ErrFieldIndexed: a field is declared at most once.
	ErrFieldIndexed = errors.New("filter: field already indexed")
	// ErrBadField: an indexed field's name is one a selector can write:
	// 1 to 128 characters of [A-Za-z0-9_-].
	ErrBadField = errors.New("filter: invalid field name: use 1-128 characters of A-Z a-z 0-9 _ - (and . between the names of a path into nested objects)")
)

// NewIndex returns an index of no fields.
func NewIndex() *Index { return &Index{fields: map[string]*fieldIndex{}} }

func newFieldIndex() *fieldIndex {
	return &fieldIndex{hasNum: roaring.New(), hasStr: roaring.New(), hasArr: roaring.New(),
		strs: newPostings(), elemStrs: newPostings()}
}

// ValidFieldName reports whether name can be indexed (ErrBadField).
func ValidFieldName(name string) bool {
	if len(name) == 0 || len(name) > 128 {
		return false
	}
	// Segments of selector bytes joined by single dots: a top-level
	// field, or a path into nested objects.
	for i := 0; i < len(name); i++ {
		if name[i] == '.' {
			if i == 0 || i == len(name)-1 || name[i-1] == '.' {
				return false
			}
			continue
		}
		if !isSelectorByte(name[i]) {
			return false
		}
	}
	return true
}

// Fields returns the indexed fields' names, sorted.
func (ix *Index) Fields() []string {
	names := make([]string, 0, len(ix.fields))
	for name := range ix.fields {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// AddField declares a field and indexes it: each must call yield once for
// every row that has attributes, with those attributes (each runs before
// AddField returns; yield must not be kept). It fails, changing nothing,
// with ErrBadField or ErrFieldIndexed.
func (ix *Index) AddField(name string, each func(yield func(row uint32, attrs []byte))) error {
	if !ValidFieldName(name) {
		return fmt.Errorf("%w: %q", ErrBadField, name)
	}
	if _, ok := ix.fields[name]; ok {
		return fmt.Errorf("%w: %s", ErrFieldIndexed, name)
	}
	fi := newFieldIndex()
	if strings.Contains(name, ".") {
		fi.path = strings.Split(name, ".")
	}
	each(func(row uint32, attrs []byte) {
		if fi.path != nil {
			if val := lookupPath(attrs, fi.path); val != nil {
				fi.add(row, val)
			}
			return
		}
		forEachMember(attrs, func(key []byte, esc bool, val []byte) bool {
			if k, ok := memberName(key, esc); ok && k == name {
				fi.add(row, val)
				return false
			}
			return true
		})
	})
	fi.optimize()
	ix.fields[name] = fi
	ix.size = ix.measure()
	return nil
}

// RemoveField forgets a field's index. It reports whether it was indexed.
func (ix *Index) RemoveField(name string) bool {
	_, ok := ix.fields[name]
	delete(ix.fields, name)
	ix.size = ix.measure()
	return ok
}

// memberName decodes a raw member name (aliasing key when it has no
// escapes: see jsonString).
func memberName(key []byte, esc bool) (string, bool) {
	if !esc {
		return aliasString(key), true
	}
	return jsonString(key)
}

// Add indexes a row's attributes. REQUIRES: the row is not indexed (Remove
// its old attributes first); attrs were accepted by ValidateAttrs (nil or
// empty: no attributes, nothing to do).
func (ix *Index) Add(row uint32, attrs []byte) {
	ix.each(attrs, func(fi *fieldIndex, val []byte) { ix.size += fi.add(row, val) })
}

// Remove unindexes a row. REQUIRES: attrs are exactly the attributes Add
// was given for it.
func (ix *Index) Remove(row uint32, attrs []byte) {
	ix.each(attrs, func(fi *fieldIndex, val []byte) { ix.size += fi.remove(row, val) })
}

// each calls fn for every member of attrs that is an indexed field.
func (ix *Index) each(attrs []byte, fn func(fi *fieldIndex, val []byte)) {
	if len(attrs) == 0 || len(ix.fields) == 0 {
		return
	}
	forEachMember(attrs, func(key []byte, esc bool, val []byte) bool {
		if k, ok := memberName(key, esc); ok {
			if fi := ix.fields[k]; fi != nil && fi.path == nil {
				fn(fi, val)
			}
		}
		return true
	})
	for _, fi := range ix.fields {
		if fi.path != nil {
			if val := lookupPath(attrs, fi.path); val != nil {
				fn(fi, val)
			}
		}
	}
}

// add indexes a row's value and returns the change of its size.
func (fi *fieldIndex) add(row uint32, val []byte) (d int64) {
	v := decodeValue(val)
	switch v.t {
	case tNum:
		d = bitmapAdd(fi.hasNum, row) + fi.nums.add(v.num, row)
	case tStr:
		d = bitmapAdd(fi.hasStr, row) + fi.strs.add(v.str, row)
	case tArr:
		d = bitmapAdd(fi.hasArr, row)
		forEachElement(aliasBytes(v.str), func(elem []byte) bool {
			switch e := decodeValue(elem); e.t {
			case tNum:
				d += fi.elemNums.add(e.num, row)
			case tStr:
				d += fi.elemStrs.add(e.str, row)
			}
			return true
		})
	}
	return d
}

// remove unindexes a row's value and returns the change of its size.
func (fi *fieldIndex) remove(row uint32, val []byte) (d int64) {
	v := decodeValue(val)
	switch v.t {
	case tNum:
		d = bitmapRemove(fi.hasNum, row) + fi.nums.remove(v.num, row)
	case tStr:
		d = bitmapRemove(fi.hasStr, row) + fi.strs.remove(v.str, row)
	case tArr:
		d = bitmapRemove(fi.hasArr, row)
		forEachElement(aliasBytes(v.str), func(elem []byte) bool {
			switch e := decodeValue(elem); e.t {
			case tNum:
				d += fi.elemNums.remove(e.num, row)
			case tStr:
				d += fi.elemStrs.remove(e.str, row)
			}
			return true
		})
	}
	return d
}

// Optimize compresses the bitmaps' runs (roaring's RunOptimize): call it
// after adding many rows at once (rebuilding at open with Add), as
// AddField does by itself. It changes no answer.
func (ix *Index) Optimize() {
	for _, fi := range ix.fields {
		fi.optimize()
	}
	ix.size = ix.measure()
}

// optimize compresses runs after a bulk build.
func (fi *fieldIndex) optimize() {
	for _, b := range []*roaring.Bitmap{fi.hasNum, fi.hasStr, fi.hasArr} {
		b.RunOptimize()
	}
	fi.strs.optimize()
	fi.elemStrs.optimize()
	fi.nums.optimize()
	fi.elemNums.optimize()
}

// fieldOverhead estimates the bytes a field costs besides its postings
// (its map entry, its three bitmaps' fixed parts, its maps' headers).
const fieldOverhead = 3*manyEntryBytes + 256

// SizeInBytes estimates the heap the index holds: the bitmaps'
// serialized sizes (roaring's GetSizeInBytes) plus the keys and a fixed
// estimate per map entry and bucket (postings.sizeInBytes). Every change
// keeps it up to date, so it costs O(1): the engine reads it after every
// write, for its memory accounting.
func (ix *Index) SizeInBytes() uint64 { return uint64(max(ix.size, 0)) }

// measure computes SizeInBytes afresh, walking every posting.
func (ix *Index) measure() int64 {
	var n int64
	for name, fi := range ix.fields {
		n += keyBytes(name) + fieldOverhead
		n += int64(fi.hasNum.GetSizeInBytes() + fi.hasStr.GetSizeInBytes() + fi.hasArr.GetSizeInBytes())
		n += fi.strs.sizeInBytes() + fi.elemStrs.sizeInBytes()
		n += fi.nums.sizeInBytes() + fi.elemNums.sizeInBytes()
	}
	return n
}
