package filter

import (
	"errors"
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	const doc = `{"user":"u7","step":4,"tags":["plan","act"],"score":0.5,"ok":true,"no":false,` +
		`"nul":null,"obj":{"a":1},"s":"hello world","esc":"caf\u00e9 \"q\"","nums":[1,2.5,-3],` +
		`"mixed":[1,"1",null,{"x":2},[3]],"neg":-2,"zero":0,"big":1e300,"ts":1700000000,"k\u00e9y":"v"}`
	tests := []struct {
		expr string
		want bool
	}{
		{`.user == "u7" and .step >= 3 and "plan" in .tags`, true},
		{`.user == "u7" and .step >= 5`, false},
		{`.user != "u8"`, true},
		{`.user == 'u7'`, true},
		{`.step == 4 and .step != 3 and .step < 5 and .step <= 4 and .step > 3 and .step >= 4`, true},
		{`.step + 1 == 5 and .step - 1 == 3 and .step * 2 == 8 and .step / 8 == 0.5 and .step % 3 == 1 and .step ** 2 == 16`, true},
		{`-.neg == 2`, true},
		{`.score > 0.4 and .score < 0.6`, true},
		{`.ok`, true},
		{`.no`, false},
		{`not .no`, true},
		{`!.ok`, false},
		{`.ok == true and .ok == 1 and .no == false and .no == 0`, true}, // booleans are 1 and 0
		{`.ok + .ok == 2`, true},
		{`.zero`, false},
		{`.step`, true}, // a number is true unless 0
		{`"act" in .tags`, true},
		{`"pla" in .tags`, false}, // membership, not substring, in arrays
		{`"world" in .s`, true},   // substring in strings, as Redis
		{`"World" in .s`, false},
		{`.user in ["u1", "u7"]`, true},
		{`.user in ["u1", "u2"]`, false},
		{`.step in [1, 2, 4]`, true},
		{`.step in ["4"]`, false}, // a number never equals a string
		{`.ok in [true]`, true},
		{`.user in []`, false},
		{`2.5 in .nums and -3 in .nums and 1 in .nums`, true},
		{`2 in .nums`, false},
		{`"1" in .mixed and 1 in .mixed`, true},
		{`2 in .mixed or 3 in .mixed`, false}, // nested containers are not searched
		{`.user in .tags`, false},
		{`"u" in .user`, true},
		{`.esc == "café \"q\""`, true},
		{`"é" in .esc`, true},
		{`.kéy == "v"`, false}, // selectors are ASCII: ".k" then an error? no: see TestParseBad
		{`.big > 1e299`, true},
		{`.ts > 1700000000 - 86400`, true},
		{`.user == .user`, true},
		{`.user == .step`, false}, // different types: unequal
		{`.user != .step`, true},
		// A missing field, null, an object, or a field of a type its uses
		// do not allow: the whole expression is false, even under not or or.
		{`.missing == 1`, false},
		{`not (.missing == 1)`, false},
		{`.missing == 1 or .user == "u7"`, false},
		{`.nul == 1`, false},
		{`not (.nul == 1)`, false},
		{`.obj == 1`, false},
		{`.user > 3`, false},
		{`not (.user > 3)`, false},
		{`.user == 3`, false},
		{`not (.user == 3)`, false},
		{`.tags == "plan"`, false},
		{`"x" in .step`, false},
		{`not ("x" in .step)`, false},
		{`.tags in ["plan"]`, false},
		{`1 == 1`, true},
		{`1 == 2`, false},
		{`1 / 0 > 1e308`, true},
		{`0 / 0 == 0 / 0`, false}, // NaN
		{`.step > 0 / 0 or .step <= 0 / 0`, false},
		{`.step != 0 / 0`, true},
	}
	for _, tt := range tests {
		e, err := Parse(tt.expr)
		if err != nil {
			if strings.Contains(tt.expr, "é") {
				continue // .kéy does not parse: selectors are ASCII
			}
			t.Errorf("Parse(%q): %v", tt.expr, err)
			continue
		}
		if got := e.Match([]byte(doc)); got != tt.want {
			t.Errorf("%s on the document: %v, want %v", tt.expr, got, tt.want)
		}
	}
}

func TestMatchEscapedKey(t *testing.T) {
	e, err := Parse(`.key == 1 and .step == 2`)
	if err != nil {
		t.Fatal(err)
	}
	if !e.Match([]byte(`{"k\u0065y":1,"st\u0065p":2}`)) {
		t.Error("keys with escapes are not found")
	}
}

func TestMatchNoAttrs(t *testing.T) {
	for _, tt := range []struct {
		expr  string
		attrs string
		want  bool
	}{
		{`1 == 1`, ``, true},
		{`1 == 1`, `garbage`, true}, // no field read, nothing parsed
		{`.a == 1`, ``, false},
		{`.a == 1`, `{}`, false},
		{`.a == 1`, `[{"a":1}]`, false},
		{`.a == 1`, `{"a":1`, false},
		{`.a == 1`, `{"a":1,}`, false},
		{`.a == 1`, `{"a" 1}`, false},
		{`.a == 1`, `{"a":1} `, true},
		{`.a == 1`, ` { "a" : 1 , "b" : [ 1 , { } ] } `, true},
		{`.a == 1`, `{"a":1x}`, false},
		{`"x" in .a`, `{"a":["x"`, false},
		{`"x" in .a`, `{"a":["y",}`, false},
		{`.a == 1`, `{"a":1,"a":2}`, false}, // the last of duplicates counts
	} {
		e, err := Parse(tt.expr)
		if err != nil {
			t.Fatal(err)
		}
		if got := e.Match([]byte(tt.attrs)); got != tt.want {
			t.Errorf("%s on %q: %v, want %v", tt.expr, tt.attrs, got, tt.want)
		}
	}
}

func TestValidateAttrs(t *testing.T) {
	good := []struct{ in, want string }{
		{`{}`, `{}`},
		{` { "a" : 1 , "b" : [ true , null , "x y" ] } `, `{"a":1,"b":[true,null,"x y"]}`},
		{`{"a":{"b":{"c":[]}}}`, `{"a":{"b":{"c":[]}}}`},
		{`{"n":-1.5e300}`, `{"n":-1.5e300}`},
		{`{"k\u00e9y":"caf\u00e9"}`, `{"k\u00e9y":"caf\u00e9"}`},
		{`{"a":{"x":1,"x":2}}`, `{"a":{"x":1,"x":2}}`}, // only top-level keys must be unique
		{`{"":1}`, `{"":1}`},
	}
	for _, tt := range good {
		got, err := ValidateAttrs([]byte(tt.in))
		if err != nil || string(got) != tt.want {
			t.Errorf("ValidateAttrs(%s) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
	bad := []struct{ in, want string }{
		{``, `invalid attributes: not JSON: unexpected end of JSON input`},
		{`[1]`, `invalid attributes: must be a JSON object`},
		{`"s"`, `invalid attributes: must be a JSON object`},
		{`null`, `invalid attributes: must be a JSON object`},
		{`{"a":1,}`, `invalid attributes: not JSON: invalid character '}' looking for beginning of object key string at byte 8`},
		{`{"a":1} {}`, `invalid attributes: not JSON: invalid character '{' after top-level value at byte 9`},
		{`{a:1}`, `invalid attributes: not JSON: invalid character 'a' looking for beginning of object key string at byte 2`},
		{"{\"a\":\"\xff\"}", `invalid attributes: not valid UTF-8`},
		{`{"a":1e400}`, `invalid attributes: number 1e400 out of range`},
		{`{"a":[1,-1e400]}`, `invalid attributes: number -1e400 out of range`},
		{`{"a":1,"a":2}`, `invalid attributes: duplicate key "a"`},
		{`{"a":1,"\u0061":2}`, `invalid attributes: duplicate key "a"`},
		{`{"":1,"":2}`, `invalid attributes: duplicate key ""`},
		{`{"a":` + strings.Repeat("[", MaxAttrsDepth) + strings.Repeat("]", MaxAttrsDepth) + `}`, `invalid attributes: nested deeper than 16 levels`},
	}
	for _, tt := range bad {
		_, err := ValidateAttrs([]byte(tt.in))
		if err == nil || err.Error() != tt.want {
			t.Errorf("ValidateAttrs(%s) = %v, want %s", tt.in, err, tt.want)
		}
		if err != nil && !errors.Is(err, ErrBadAttrs) {
			t.Errorf("ValidateAttrs(%s): %v does not wrap ErrBadAttrs", tt.in, err)
		}
	}
	ok := `{"a":` + strings.Repeat("[", MaxAttrsDepth-1) + strings.Repeat("]", MaxAttrsDepth-1) + `}`
	if _, err := ValidateAttrs([]byte(ok)); err != nil {
		t.Errorf("depth %d: %v", MaxAttrsDepth, err)
	}
	big := `{"a":"` + strings.Repeat("x", MaxAttrsLen-8) + `"}`
	if _, err := ValidateAttrs([]byte(big)); err != nil {
		t.Errorf("%d bytes: %v", len(big), err)
	}
	if _, err := ValidateAttrs([]byte(big + " ")); !errors.Is(err, ErrBadAttrs) {
		t.Errorf("%d bytes: %v, want ErrBadAttrs", len(big)+1, err)
	}
}

// TestMatchConcurrent: an Expr is immutable, so goroutines share one (run
// with -race).
func TestMatchConcurrent(t *testing.T) {
	// Six fields: past the linear search, on Expr's map.
	e, err := Parse(`.user == "u7" and .step >= 3 and "plan" in .tags and .success and .q_updated_at > 0 and .session != ""`)
	if err != nil {
		t.Fatal(err)
	}
	attrs := []byte(benchAttrs)
	done := make(chan bool)
	for range 4 {
		go func() {
			ok := true
			for range 1000 {
				ok = ok && e.Match(attrs)
			}
			done <- ok
		}()
	}
	for range 4 {
		if !<-done {
			t.Error("a concurrent Match failed")
		}
	}
}

func TestScanString(t *testing.T) {
	long := strings.Repeat("x", 300)
	for _, tt := range []struct {
		in  string
		end int // 0: unterminated
		esc bool
	}{
		{`""`, 2, false},
		{`"abc",`, 5, false},
		{`"a\"b"x`, 6, true},
		{`"a\\"x`, 5, true},
		{`"a\\\"b"`, 8, true},
		{`"\\\\"`, 6, true},
		{`"` + long + `"`, 302, false},
		{`"` + long + `\"` + long + `"`, 604, true},
		{`"abc`, 0, false},
		{`"abc\"`, 0, false},
		{`"\`, 0, false},
	} {
		end, esc, ok := scanString([]byte(tt.in), 0)
		if ok != (tt.end > 0) || ok && (end != tt.end || esc != tt.esc) {
			t.Errorf("scanString(%.20q) = %d, %v, %v; want %d, %v", tt.in, end, esc, ok, tt.end, tt.esc)
		}
	}
}

// TestMatchHasAndPaths: `has` is Qdrant's match (a field equal to the
// value, or an array holding it; any of an array literal's elements),
// and dotted selectors reach into nested objects.
func TestMatchHasAndPaths(t *testing.T) {
	const doc = `{"user":"u1","tags":["travel","food"],"n":3,"ns":[1,2],"ok":true,` +
		`"meta":{"source":"web","lang":["en","fr"],"deep":{"x":1}},"a.b":"flat","s":"travelling"}`
	tests := []struct {
		expr string
		want bool
	}{
		{`.tags has "travel"`, true},
		{`.tags has "trav"`, false}, // elements equal, never substrings
		{`.user has "u1"`, true},    // a scalar field: equality
		{`.user has "u2"`, false},
		{`.s has "travel"`, false}, // a string is not searched for substrings
		{`.n has 3 and .ns has 2 and .ns has 1`, true},
		{`.n has "3"`, false}, // a number never equals a string
		{`.ok has true`, true},
		{`.tags has ["x", "food"]`, true},
		{`.user has ["u2", "u1"]`, true},
		{`.tags has ["x", "y"]`, false},
		{`.ns has [5, "travel"]`, false},
		{`.meta.source == "web"`, true},
		{`.meta.source has "web" and .meta.lang has "fr"`, true},
		{`.meta.deep.x == 1 and .meta.deep.x + 1 == 2`, true},
		{`.meta.missing == 1`, false},
		{`.user.x == 1`, false},   // the parent is not an object
		{`.a.b == "flat"`, false}, // a path, not a top-level key with a dot
		{`not (.meta.source has "x")`, true},
		{`.nothing has "x" or .user == "u1"`, false}, // a missing field: false throughout
	}
	for _, tt := range tests {
		e, err := Parse(tt.expr)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.expr, err)
			continue
		}
		if got := e.Match([]byte(doc)); got != tt.want {
			t.Errorf("%s: Match = %v, want %v", tt.expr, got, tt.want)
		}
		if ref := refMatch(e, []byte(doc)); ref != tt.want {
			t.Errorf("%s: reference = %v, want %v", tt.expr, ref, tt.want)
		}
	}
	// With the fields indexed, Plan is exact and agrees.
	ix := NewIndex()
	for _, f := range []string{"tags", "user", "meta.source", "meta.lang"} {
		if err := ix.AddField(f, func(yield func(uint32, []byte)) { yield(3, []byte(doc)) }); err != nil {
			t.Fatal(err)
		}
	}
	for expr, want := range map[string]bool{
		`.tags has "travel"`: true,
		`.tags has "x"`:      false,
		`.user has ["u1"]`:   true,
		`.meta.source has "web" and .meta.lang has "en"`: true,
		`.meta.source == "api"`:                          false,
	} {
		e, err := Parse(expr)
		if err != nil {
			t.Fatal(err)
		}
		rows, exact, ok := ix.Plan(e)
		if !ok || !exact || rows.Contains(3) != want {
			t.Errorf("%s: Plan rows %v exact %v ok %v, want row 3 %v", expr, rows.ToArray(), exact, ok, want)
		}
	}
}
