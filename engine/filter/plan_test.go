package filter

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
)

var propFields = []string{"a", "b", "c", "d"}

// exprFields are the fields random expressions and indexes use: the
// top-level ones and a path into the nested object "e".
var exprFields = []string{"a", "b", "c", "d", "e.f"}

// randomValue returns a random JSON value of every kind the language meets.
func randomValue(r *rand.Rand) string {
	strs := []string{`"x"`, `"y"`, `"xy"`, `""`, `"\u00e9"`, `"x\"y"`}
	switch r.IntN(9) {
	case 0:
		return "null"
	case 1:
		return `{"x":1}`
	case 2:
		return []string{"true", "false"}[r.IntN(2)]
	case 3:
		return fmt.Sprint(r.IntN(6) - 1)
	case 4:
		return []string{"0.5", "-0", "1e5", "2.5e-3", "100000", "1700000000", "1700003600"}[r.IntN(7)]
	case 5, 6:
		return strs[r.IntN(len(strs))]
	default:
		n := r.IntN(4)
		elems := make([]string, n)
		for i := range elems {
			switch r.IntN(4) {
			case 0:
				elems[i] = fmt.Sprint(r.IntN(4))
			case 1:
				elems[i] = []string{"null", "[1]", `{"a":"x"}`, "true"}[r.IntN(4)]
			default:
				elems[i] = strs[r.IntN(len(strs))]
			}
		}
		return "[" + strings.Join(elems, ",") + "]"
	}
}

func randomAttrs(r *rand.Rand) []byte {
	if r.IntN(10) == 0 {
		return nil
	}
	var members []string
	for _, f := range propFields {
		if r.IntN(4) > 0 {
			members = append(members, fmt.Sprintf("%q:%s", f, randomValue(r)))
		}
	}
	switch r.IntN(4) {
	case 0:
	case 1:
		members = append(members, fmt.Sprintf(`"e":%s`, randomValue(r)))
	default:
		members = append(members, fmt.Sprintf(`"e":{"g":1,"f":%s}`, randomValue(r)))
	}
	r.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
	out, err := ValidateAttrs([]byte("{" + strings.Join(members, ",") + "}"))
	if err != nil {
		panic(err)
	}
	return out
}

// randomExpr returns a random expression text (not always well typed).
func randomExpr(r *rand.Rand, depth int) string {
	field := func() string { return "." + exprFields[r.IntN(len(exprFields))] }
	lit := func() string {
		return []string{"0", "1", "2", "-1", "0.5", "100000", "1700000000", `"x"`, `"y"`, `""`, `"é"`, "true", "false"}[r.IntN(13)]
	}
	if depth <= 0 || r.IntN(3) == 0 {
		switch r.IntN(10) {
		case 0:
			return field()
		case 1:
			return field() + " in " + []string{`["x", 1]`, `[0, 2, "y"]`, `[]`, `["xy", "é"]`}[r.IntN(4)]
		case 2:
			return lit() + " in " + field()
		case 3:
			return field() + " in " + []string{`"xyz"`, `"abc"`}[r.IntN(2)]
		case 4:
			return field() + " " + []string{"==", "!="}[r.IntN(2)] + " " + field()
		case 5:
			return field() + " + 1 > " + lit()
		case 6:
			if r.IntN(2) == 0 {
				return field() + " has " + lit()
			}
			return field() + " has " + []string{`["x", 1]`, `[0, 2, "y"]`, `["xy", "é"]`, `[true]`}[r.IntN(4)]
		default:
			ops := []string{"==", "!=", "<", "<=", ">", ">="}
			if r.IntN(2) == 0 {
				return lit() + " " + ops[r.IntN(len(ops))] + " " + field()
			}
			return field() + " " + ops[r.IntN(len(ops))] + " " + lit()
		}
	}
	switch r.IntN(5) {
	case 0:
		return "not (" + randomExpr(r, depth-1) + ")"
	case 1, 2:
		return "(" + randomExpr(r, depth-1) + ") and (" + randomExpr(r, depth-1) + ")"
	default:
		return "(" + randomExpr(r, depth-1) + ") or (" + randomExpr(r, depth-1) + ")"
	}
}

// refMatch is a reference evaluator: encoding/json's decoding and a
// straightforward interpreter of the rules in doc.go, to check Match's
// scanner and evaluator against.
func refMatch(e *Expr, attrs []byte) bool {
	var m map[string]any
	if len(e.fields) > 0 {
		if json.Unmarshal(attrs, &m) != nil {
			return false
		}
	}
	vals := make([]any, len(e.fields))
	for i, f := range e.fields {
		var v any = m
		for _, seg := range strings.Split(f, ".") {
			obj, ok := v.(map[string]any)
			if !ok {
				v = nil
				break
			}
			v = obj[seg]
		}
		var t typeSet
		switch x := v.(type) {
		case float64:
			t = tNum
		case bool:
			t, v = tNum, b2f(x)
		case string:
			t = tStr
		case []any:
			t = tArr
		}
		if t&e.req[i] == 0 {
			return false
		}
		vals[i] = v
	}
	var ev func(n *node) any
	ev = func(n *node) any {
		switch n.op {
		case opNum:
			return n.num
		case opStr:
			return n.str
		case opArr:
			var out []any
			for _, l := range n.arr {
				if l.isStr {
					out = append(out, l.str)
				} else {
					out = append(out, l.num)
				}
			}
			return out
		case opField:
			return vals[n.field]
		case opNot:
			return b2f(ev(n.l).(float64) == 0)
		case opNeg:
			return -ev(n.l).(float64)
		case opAnd:
			return b2f(ev(n.l).(float64) != 0 && ev(n.r).(float64) != 0)
		case opOr:
			return b2f(ev(n.l).(float64) != 0 || ev(n.r).(float64) != 0)
		case opEq:
			return b2f(refEqual(ev(n.l), ev(n.r)))
		case opNe:
			return b2f(!refEqual(ev(n.l), ev(n.r)))
		case opIn:
			x, c := ev(n.l), ev(n.r)
			switch c := c.(type) {
			case string:
				xs, ok := x.(string)
				return b2f(ok && strings.Contains(c, xs))
			case []any:
				for _, el := range c {
					if b, ok := el.(bool); ok {
						el = b2f(b)
					}
					if refEqual(x, el) {
						return 1.0
					}
				}
			}
			return 0.0
		case opHas:
			x, c := ev(n.l), ev(n.r)
			one := func(y any) bool {
				if b, ok := y.(bool); ok {
					y = b2f(b)
				}
				if cs, ok := c.([]any); ok {
					return slices.ContainsFunc(cs, func(el any) bool { return refEqual(y, el) })
				}
				return refEqual(y, c)
			}
			if xs, ok := x.([]any); ok {
				return b2f(slices.ContainsFunc(xs, one))
			}
			return b2f(one(x))
		}
		a, b := ev(n.l).(float64), ev(n.r).(float64)
		switch n.op {
		case opAdd:
			return a + b
		case opSub:
			return a - b
		case opMul:
			return a * b
		case opDiv:
			return a / b
		case opMod:
			return math.Mod(a, b)
		case opPow:
			return math.Pow(a, b)
		case opLt:
			return b2f(a < b)
		case opLe:
			return b2f(a <= b)
		case opGt:
			return b2f(a > b)
		}
		return b2f(a >= b)
	}
	return ev(e.root).(float64) != 0
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func refEqual(a, b any) bool {
	switch a := a.(type) {
	case float64:
		bf, ok := b.(float64)
		return ok && a == bf
	case string:
		bs, ok := b.(string)
		return ok && a == bs
	}
	return false
}

// TestPlanProperty: on random attributes and expressions, Match agrees
// with the reference evaluator, and Plan's rows hold every matching row
// (exactly them when it says exact), with the index built by AddField and
// kept up by Add and Remove as attributes change.
func TestPlanProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const rows = 200
	parsed, planned, exactPlans := 0, 0, 0
	for round := 0; round < 20; round++ {
		attrs := make([][]byte, rows)
		for i := range attrs {
			attrs[i] = randomAttrs(r)
		}
		ix := NewIndex()
		for _, f := range exprFields {
			if r.IntN(3) > 0 {
				err := ix.AddField(f, func(yield func(uint32, []byte)) {
					for i, a := range attrs {
						if a != nil {
							yield(uint32(i), a)
						}
					}
				})
				if err != nil {
					t.Fatal(err)
				}
			}
		}
		// Change some rows' attributes, as SETATTR would.
		for range rows / 3 {
			i := r.IntN(rows)
			ix.Remove(uint32(i), attrs[i])
			attrs[i] = randomAttrs(r)
			ix.Add(uint32(i), attrs[i])
		}
		for range 100 {
			src := randomExpr(r, 3)
			e, err := Parse(src)
			if err != nil {
				continue
			}
			parsed++
			want := roaring.New()
			for i, a := range attrs {
				got := e.Match(a)
				if ref := refMatch(e, a); got != ref {
					t.Fatalf("%s on %s: Match %v, reference %v", e, a, got, ref)
				}
				if got {
					want.Add(uint32(i))
				}
			}
			rowsOut, exact, ok := ix.Plan(e)
			if !ok {
				if slices.ContainsFunc(e.Fields(), func(f string) bool { return slices.Contains(ix.Fields(), f) }) {
					t.Fatalf("%s: Plan not ok with indexed fields %v", e, ix.Fields())
				}
				continue
			}
			planned++
			if !roaring.AndNot(want, rowsOut).IsEmpty() {
				t.Fatalf("%s (indexed %v): Plan misses rows %v", e, ix.Fields(), roaring.AndNot(want, rowsOut).ToArray())
			}
			if exact {
				exactPlans++
				if !rowsOut.Equals(want) {
					t.Fatalf("%s (indexed %v): exact Plan has extra rows %v", e, ix.Fields(), roaring.AndNot(rowsOut, want).ToArray())
				}
			}
		}
	}
	t.Logf("%d expressions parsed, %d planned, %d exactly", parsed, planned, exactPlans)
	if planned < 500 || exactPlans < 100 {
		t.Errorf("too few plans exercised: %d planned, %d exact", planned, exactPlans)
	}
}
