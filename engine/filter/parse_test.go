package filter

import (
	"errors"
	"strings"
	"testing"
)

func TestParseGood(t *testing.T) {
	tests := []struct{ in, want string }{
		{`.user == "u7" and .step >= 3 and "plan" in .tags`, `(((.user == "u7") and (.step >= 3)) and ("plan" in .tags))`},
		{`.a == 1 || .b == 2 && .c == 3`, `((.a == 1) or ((.b == 2) and (.c == 3)))`},
		{`(.a == 1 or .b == 2) and .c`, `(((.a == 1) or (.b == 2)) and .c)`},
		{`!.deleted`, `(not .deleted)`},
		{`not .a == 1`, `((not .a) == 1)`}, // as in Redis: not binds tightest
		{`not (.a == 1)`, `(not (.a == 1))`},
		{`.year >= 1980 and .rating > 7`, `((.year >= 1980) and (.rating > 7))`},
		{`.a + .b * .c ** 2 > 10`, `((.a + (.b * (.c ** 2))) > 10)`},
		{`.a ** .b ** .c`, `(.a ** (.b ** .c))`},
		{`.a - .b - .c == 0`, `(((.a - .b) - .c) == 0)`},
		{`.a % 2 == 1`, `((.a % 2) == 1)`},
		{`-.a < 3`, `((-.a) < 3)`},
		{`.t > 1700000000 - 86400`, `(.t > 1699913600)`}, // constants fold
		{`2 ** 3 ** 2 == 512`, `true`},
		{`-2 ** 2`, `4`}, // unary minus binds tighter than **, as Redis's -2 literal
		{`1 / 0 > 5`, `true`},
		{`.x < 1/0`, `(.x < (1 / 0))`},
		{`.x != 0/0`, `(.x != (0 / 0))`},
		{`.x > -1/0`, `(.x > (-1 / 0))`},
		{`.s == 'it\'s'`, `(.s == "it's")`},
		{`.tags has "a" and .meta.src has [1, "b"]`, `((.tags has "a") and (.meta.src has [1, "b"]))`},
		{`.n has 1 + 1`, `(.n has 2)`},
		{`.a.b-c.d_e == 1`, `(.a.b-c.d_e == 1)`},
		{`.s == "a\"b\\c\n\u00e9\ud83d\ude00"`, `(.s == "a\"b\\c\né😀")`},
		{`.k in ["a", 'b', 1, -2.5, true, false]`, `(.k in ["a", "b", 1, -2.5, true, false])`},
		{`.k in []`, `(.k in [])`},
		{`"plan" in .tags`, `("plan" in .tags)`},
		{`"ell" in "hello"`, `true`},
		{`.s in "hello"`, `(.s in "hello")`},
		{`.a == .b`, `(.a == .b)`},
		{`.a in .b`, `(.a in .b)`},
		{`.flag == true`, `(.flag == true)`},
		{`.flag`, `.flag`},
		{`.x-y_1 == 1`, `(.x-y_1 == 1)`}, // selectors take [A-Za-z0-9_-], as Redis's
		{`.n == 1e3 and .m == 2.5E-1`, `((.n == 1000) and (.m == 0.25))`},
		{"\t.a\n==\r1 ", `(.a == 1)`},
		{`(((((.a)))))`, `.a`},
		{`.a == 1 and 1 == 1`, `((.a == 1) and true)`},
	}
	for _, tt := range tests {
		e, err := Parse(tt.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.in, err)
			continue
		}
		if got := e.String(); got != tt.want {
			t.Errorf("Parse(%q).String() = %s, want %s", tt.in, got, tt.want)
		}
		again, err := Parse(e.String())
		if err != nil || again.String() != e.String() {
			t.Errorf("round trip of %q: %v, %v", e.String(), again, err)
		}
	}
}

func TestParseBad(t *testing.T) {
	tests := []struct {
		in   string
		want string
		kind error
	}{
		{``, `filter: empty expression at column 1`, ErrSyntax},
		{`   `, `filter: empty expression at column 4`, ErrSyntax},
		{`(.year > 1950) and (.rating > 7))`, `filter: unexpected ")" at column 33`, ErrSyntax},
		{`.a == )`, `filter: unexpected ")" at column 7`, ErrSyntax},
		{`(.a == 1`, `filter: unclosed "(" at column 1`, ErrSyntax},
		{`.a ==`, `filter: unexpected end of expression at column 6`, ErrSyntax},
		{`.a == 1 .b`, `filter: unexpected ".b" at column 9`, ErrSyntax},
		{`.`, `filter: "." must be followed by a field name at column 1`, ErrSyntax},
		{`. a == 1`, `filter: "." must be followed by a field name at column 1`, ErrSyntax},
		{`.a. == 1`, `filter: "." must be followed by a field name at column 3`, ErrSyntax},
		{`.a..b == 1`, `filter: "." must be followed by a field name at column 3`, ErrSyntax},
		{`"x" has .tags`, `filter: the left operand of has must be a field at column 1`, ErrType},
		{`.a has .b`, `filter: the right operand of has must be a string, a number or an array, not a field at column 8`, ErrType},
		{`.a has []`, `filter: the right operand of has must not be an empty array at column 8`, ErrType},
		{`.a has .b + 1`, `filter: the right operand of has must not use a field at column 8`, ErrType},
		{`.a has "x" and .a > 1`, `filter: field .a is used as a number here but as a string or an array elsewhere: no memory could match at column 16`, ErrType},
		{`user == 1`, `filter: unknown word "user" (fields are written .user) at column 1`, ErrSyntax},
		{`.a == null`, `filter: unknown word "null" (fields are written .null) at column 7`, ErrSyntax},
		{`.a = 1`, `filter: unexpected character '=' at column 4`, ErrSyntax},
		{`.a & 1`, `filter: unexpected character '&' at column 4`, ErrSyntax},
		{`.a == "abc`, `filter: unterminated string at column 7`, ErrSyntax},
		{`.a == "a\qb"`, `filter: unknown escape "\\q" at column 9`, ErrSyntax},
		{`.a == "\u12"`, `filter: malformed \u escape at column 8`, ErrSyntax},
		{`.a == 1.`, `filter: malformed number "1." at column 7`, ErrSyntax},
		{`.a == 1e`, `filter: malformed number "1e" at column 7`, ErrSyntax},
		{`.a == 12abc`, `filter: malformed number "12a" at column 7`, ErrSyntax},
		{`.a == 1.2.3`, `filter: malformed number "1.2." at column 7`, ErrSyntax},
		{`.a == 1e999`, `filter: number 1e999 out of range at column 7`, ErrSyntax},
		{`1 < .a < 3`, `filter: comparisons do not chain: use and, or parentheses at column 8`, ErrSyntax},
		{`.a in [1, [2]]`, `filter: unexpected "[" in an array (elements are numbers, strings, true or false) at column 11`, ErrSyntax},
		{`.a in [1, .b]`, `filter: unexpected ".b" in an array (elements are numbers, strings, true or false) at column 11`, ErrSyntax},
		{`.a in [1 2]`, `filter: unexpected number at column 10`, ErrSyntax},
		{`.a in [1,`, `filter: unclosed "[" at column 7`, ErrSyntax},
		{`.a in [- "x"]`, `filter: unexpected string at column 10`, ErrSyntax},
		{`"a" > 3`, `filter: the operands of ">" must be a number, not a string at column 1`, ErrType},
		{`"a" - 1`, `filter: the operands of "-" must be a number, not a string at column 1`, ErrType},
		{`not [1]`, `filter: an array can only be the right operand of in at column 5`, ErrType},
		{`not "a"`, `filter: the operand of not must be a number, not a string at column 5`, ErrType},
		{`"a"`, `filter: the expression (a condition) must be a number, not a string at column 1`, ErrType},
		{`"a" == 1`, `filter: cannot compare a string with a number at column 5`, ErrType},
		{`.a == [1]`, `filter: an array can only be the right operand of in at column 7`, ErrType},
		{`[1] in [1]`, `filter: an array can only be the right operand of in at column 1`, ErrType},
		{`1 in 2`, `filter: the right operand of in must be an array or a string, not a number at column 6`, ErrType},
		{`1 in "abc"`, `filter: the left operand of in with a string on the right must be a string, not a number at column 1`, ErrType},
		{`.x == 1 or .x == "a"`, `filter: field .x is used as a string here but as a number elsewhere: no memory could match at column 12`, ErrType},
		{`.tags > 1 and "a" in .tags`, `filter: field .tags is used as a string or an array here but as a number elsewhere: no memory could match at column 22`, ErrType},
		{`.a + "x" == 1`, `filter: the operands of "+" must be a number, not a string at column 6`, ErrType},
		{`.s and .s == "x"`, `filter: field .s is used as a number here but as a string elsewhere: no memory could match at column 1`, ErrType},
	}
	for _, tt := range tests {
		_, err := Parse(tt.in)
		if err == nil {
			t.Errorf("Parse(%q) succeeded, want %s", tt.in, tt.want)
			continue
		}
		if err.Error() != tt.want {
			t.Errorf("Parse(%q) = %s\n                     want %s", tt.in, err, tt.want)
		}
		if !errors.Is(err, tt.kind) {
			t.Errorf("Parse(%q): error does not wrap %v", tt.in, tt.kind)
		}
	}
}

func TestParseLimits(t *testing.T) {
	long := strings.Repeat(" ", MaxExprLen-6) + ".a > 1"
	if _, err := Parse(long); err != nil {
		t.Errorf("%d-byte expression: %v", len(long), err)
	}
	if _, err := Parse(long + " "); !errors.Is(err, ErrTooLong) {
		t.Errorf("%d-byte expression: %v, want ErrTooLong", len(long)+1, err)
	}

	deep := strings.Repeat("(", MaxDepth) + ".a" + strings.Repeat(")", MaxDepth)
	if _, err := Parse(deep); err != nil {
		t.Errorf("%d nested parentheses: %v", MaxDepth, err)
	}
	if _, err := Parse(strings.Repeat("(", 2*MaxDepth) + ".a" + strings.Repeat(")", 2*MaxDepth)); !errors.Is(err, ErrTooDeep) {
		t.Errorf("%d nested parentheses: %v, want ErrTooDeep", 2*MaxDepth, err)
	}
	if _, err := Parse(strings.Repeat("not ", MaxDepth-1) + ".a"); err != nil {
		t.Errorf("tree of height %d: %v", MaxDepth, err)
	}
	if _, err := Parse(strings.Repeat("not ", MaxDepth) + ".a"); !errors.Is(err, ErrTooDeep) {
		t.Errorf("tree of height %d: %v, want ErrTooDeep", MaxDepth+1, err)
	}
	chain := ".a == 0" + strings.Repeat(" or .a == 1", MaxDepth)
	if _, err := Parse(chain); !errors.Is(err, ErrTooDeep) {
		t.Errorf("or-chain of %d: %v, want ErrTooDeep", MaxDepth+1, err)
	}
	pow := ".a" + strings.Repeat(" ** 2", 500)
	if _, err := Parse(pow); !errors.Is(err, ErrTooDeep) {
		t.Errorf("** chain of 500: %v, want ErrTooDeep", err)
	}

	arr := func(n int) string {
		return ".a in [" + strings.TrimSuffix(strings.Repeat("1,", n), ",") + "]"
	}
	if _, err := Parse(arr(MaxArrayLen)); err != nil {
		t.Errorf("array of %d: %v", MaxArrayLen, err)
	}
	if _, err := Parse(arr(MaxArrayLen + 1)); !errors.Is(err, ErrArrayTooLong) {
		t.Errorf("array of %d: %v, want ErrArrayTooLong", MaxArrayLen+1, err)
	}
}

func TestExprFields(t *testing.T) {
	e, err := Parse(`.b == 1 and .a == "x" or .b > 2 and "t" in .c`)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(e.Fields(), ","); got != "b,a,c" {
		t.Errorf("Fields() = %s, want b,a,c", got)
	}
}
