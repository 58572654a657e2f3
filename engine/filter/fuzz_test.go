package filter

import (
	"errors"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
)

// FuzzFilterParse parses arbitrary expressions and evaluates them on
// arbitrary attribute bytes (fuzz/doc.go lists what it checks).
func FuzzFilterParse(f *testing.F) {
	seeds := []struct{ expr, attrs string }{
		{`.user == "u7" and .step >= 3 and "plan" in .tags`, `{"user":"u7","step":4,"tags":["plan"]}`},
		{`.year >= 1980 and .rating > 7`, `{"year":1984,"rating":8.5}`},
		{`not (.a in [1, "x", true]) || .b ** 2 % 3 != -1`, `{"a":"x","b":2}`},
		{`'ell' in .s && .n / 0 > 1e308`, `{"s":"hello","n":1}`},
		{`.x == "\u00e9\"" or .y`, `{"x":"\u00e9\"","y":false}`},
		{`(((.a)))`, `{"a":[1,{"b":[2]}],"a":3}`},
		{`.a == .b`, `{"a":"1","b":1}`},
		{`.a == )`, `{`},
		{`1 < .a < 3`, `[]`},
		{`.t > 1700000000 - 86400`, "{\"t\":1700000000}\x00"},
		{`.tags has "travel" and .meta.source has ["web", 1]`, `{"tags":["food","travel"],"meta":{"source":"web","n":[1]}}`},
		{`.a.b.c has 2 or .a.b == 1`, `{"a":{"b":{"c":[1,2]}},"a.b":1}`},
	}
	for _, s := range seeds {
		f.Add(s.expr, []byte(s.attrs))
	}
	f.Fuzz(func(t *testing.T, src string, attrs []byte) {
		e, err := Parse(src)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || se.Col < 1 || se.Col > len(src)+1 && !errors.Is(err, ErrTooLong) {
				t.Fatalf("Parse(%q): error %v is not a *SyntaxError with a column in the expression", src, err)
			}
			return
		}
		again, err := Parse(e.String())
		if err != nil || again.String() != e.String() {
			t.Fatalf("Parse(%q).String() = %s, which parses to %v, %v", src, e, again, err)
		}
		got := e.Match(attrs) // must not panic on any bytes
		compact, err := ValidateAttrs(attrs)
		if err != nil {
			if !errors.Is(err, ErrBadAttrs) {
				t.Fatalf("ValidateAttrs: %v does not wrap ErrBadAttrs", err)
			}
			return
		}
		if m := e.Match(compact); m != got {
			t.Fatalf("%s: Match %v on %q, %v on its compact form %q", e, got, attrs, m, compact)
		}
		if ref := refMatch(e, compact); ref != got {
			t.Fatalf("%s on %s: Match %v, reference %v", e, compact, got, ref)
		}
		// A one-row index of every field the expression uses.
		ix := NewIndex()
		for _, name := range e.Fields() {
			if ValidFieldName(name) {
				_ = ix.AddField(name, func(yield func(uint32, []byte)) {})
			}
		}
		ix.Add(7, compact)
		rows, exact, ok := ix.Plan(e)
		if ok && got && !rows.Contains(7) {
			t.Fatalf("%s on %s: matches, but Plan leaves it out", e, compact)
		}
		if ok && exact && !rows.Equals(roaringOf(got, 7)) {
			t.Fatalf("%s on %s: Match %v, exact Plan %v", e, compact, got, rows.ToArray())
		}
		ix.Remove(7, compact)
		if ix.SizeInBytes() != emptySizeOf(ix) {
			t.Fatalf("%s on %s: postings left after Remove", e, compact)
		}
	})
}

func roaringOf(has bool, row uint32) *roaring.Bitmap {
	if has {
		return roaring.BitmapOf(row)
	}
	return roaring.New()
}

// emptySizeOf is the size of an index of ix's fields holding no rows.
func emptySizeOf(ix *Index) uint64 {
	empty := NewIndex()
	for _, name := range ix.Fields() {
		_ = empty.AddField(name, func(func(uint32, []byte)) {})
	}
	return empty.SizeInBytes()
}
