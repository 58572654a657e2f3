package filter

import (
	"math"
	"strings"
)

// value is a value during evaluation. Its zero value (t == 0) is a missing
// field, or one of a type the language does not have (null, an object).
// It is kept small (40 bytes): Match holds one per referenced field, and
// evaluation passes them by value.
type value struct {
	t   typeSet
	num float64 // tNum
	str string  // tStr: the string; tArr from a field: the raw JSON array. May alias the attributes being matched (aliasString)
	arr *node   // tArr from an array literal: the opArr node
}

// maxStackFields is how many referenced fields Match keeps on the stack;
// expressions with more allocate.
const maxStackFields = 8

// Match reports whether the memory whose attributes are attrs matches e.
// attrs is a JSON object, normally one that ValidateAttrs accepted. Match
// never panics on any input: nil (no attributes), or bytes that are not a
// JSON object as far as Match reads them (it scans the object's members
// and skips their values by counting brackets, without validating them,
// and ignores whatever follows the closing brace), match only expressions
// that use no field and are true; other malformed input gets an answer
// but no promise about which.
//
// Match reads only the top-level members that e references, without
// building maps; a member that is missing, null, an object, or of a type
// its uses in e do not allow makes e false for this memory (doc.go,
// "What matches"). If a key appears more than once, the last one counts
// (ValidateAttrs refuses duplicates). attrs must not change during the
// call; Match keeps no reference to it.
func (e *Expr) Match(attrs []byte) bool {
	var stack [maxStackFields]value
	var vals []value
	if len(e.fields) <= maxStackFields {
		vals = stack[:len(e.fields)]
	} else {
		vals = make([]value, len(e.fields))
	}
	if len(e.fields) > 0 {
		ok := forEachMember(attrs, func(key []byte, esc bool, val []byte) bool {
			i := e.fieldIndex(key, esc)
			if i >= 0 {
				vals[i] = decodeValue(val)
			}
			return true
		})
		if !ok {
			return false
		}
		// Paths into nested objects are looked up on their own; a
		// top-level key that happens to hold dots is not one.
		for _, i := range e.nested {
			vals[i] = decodeValue(lookupPath(attrs, e.paths[i]))
		}
		for i, v := range vals {
			if v.t&e.req[i] == 0 {
				return false
			}
		}
	}
	return evalBool(e.root, vals)
}

// fieldIndex returns the index in e.fields of the raw key, or -1.
func (e *Expr) fieldIndex(key []byte, esc bool) int {
	if esc {
		k, ok := jsonString(key)
		if !ok {
			return -1
		}
		if i, ok := e.index[k]; ok {
			return i
		}
		return -1
	}
	if len(e.fields) <= 4 {
		for i, f := range e.fields {
			if f == string(key) {
				return i
			}
		}
		return -1
	}
	if i, ok := e.index[string(key)]; ok {
		return i
	}
	return -1
}

// The evaluator is three mutually recursive functions, so that conditions
// and numbers pass as bool and float64 rather than as values: evalBool for
// a node in a condition, evalNum for one in arithmetic, evalVal for the
// operands of == != and in, which may be strings or arrays.
//
// REQUIRES (all three): n is type-checked and every field in vals has a
// type its requirement allows, so each operator meets the types it
// expects. They recurse at most MaxDepth deep.

// evalBool evaluates n as a condition: a number is true unless it is 0.
func evalBool(n *node, vals []value) bool {
	switch n.op {
	case opAnd:
		return evalBool(n.l, vals) && evalBool(n.r, vals)
	case opOr:
		return evalBool(n.l, vals) || evalBool(n.r, vals)
	case opNot:
		return !evalBool(n.l, vals)
	case opEq:
		return equal(evalVal(n.l, vals), evalVal(n.r, vals))
	case opNe:
		return !equal(evalVal(n.l, vals), evalVal(n.r, vals))
	case opIn:
		return contains(evalVal(n.r, vals), evalVal(n.l, vals))
	case opHas:
		return has(evalVal(n.l, vals), evalVal(n.r, vals))
	case opLt:
		return evalNum(n.l, vals) < evalNum(n.r, vals)
	case opLe:
		return evalNum(n.l, vals) <= evalNum(n.r, vals)
	case opGt:
		return evalNum(n.l, vals) > evalNum(n.r, vals)
	case opGe:
		return evalNum(n.l, vals) >= evalNum(n.r, vals)
	}
	return evalNum(n, vals) != 0
}

// evalNum evaluates n as a number (a condition as 1 or 0). Arithmetic is
// IEEE 754's: x/0 is ±Inf, 0/0 and x%0 are NaN, and every ordering with
// NaN is false.
func evalNum(n *node, vals []value) float64 {
	switch n.op {
	case opNum:
		return n.num
	case opField:
		return vals[n.field].num
	case opNeg:
		return -evalNum(n.l, vals)
	case opAdd:
		return evalNum(n.l, vals) + evalNum(n.r, vals)
	case opSub:
		return evalNum(n.l, vals) - evalNum(n.r, vals)
	case opMul:
		return evalNum(n.l, vals) * evalNum(n.r, vals)
	case opDiv:
		return evalNum(n.l, vals) / evalNum(n.r, vals)
	case opMod:
		return math.Mod(evalNum(n.l, vals), evalNum(n.r, vals))
	case opPow:
		return math.Pow(evalNum(n.l, vals), evalNum(n.r, vals))
	}
	if evalBool(n, vals) {
		return 1
	}
	return 0
}

// evalVal evaluates n as a value of any type.
func evalVal(n *node, vals []value) value {
	switch n.op {
	case opStr:
		return value{t: tStr, str: n.str}
	case opArr:
		return value{t: tArr, arr: n}
	case opField:
		return vals[n.field]
	}
	return value{t: tNum, num: evalNum(n, vals)}
}

// equal: scalars of the same type with the same value. A number never
// equals a string.
func equal(a, b value) bool {
	if a.t != b.t {
		return false
	}
	switch a.t {
	case tNum:
		return a.num == b.num
	case tStr:
		return a.str == b.str
	}
	return false
}

// contains implements `x in c`: membership if c is an array (elements
// compared with equal), substring if c and x are strings, false otherwise.
func contains(c, x value) bool {
	switch c.t {
	case tStr:
		return x.t == tStr && strings.Contains(c.str, x.str)
	case tArr:
		if c.arr != nil {
			for _, e := range c.arr.arr {
				if e.isStr {
					if x.t == tStr && x.str == e.str {
						return true
					}
				} else if x.t == tNum && x.num == e.num {
					return true
				}
			}
			return false
		}
		found := false
		forEachElement(aliasBytes(c.str), func(elem []byte) bool {
			if len(elem) == 0 || (elem[0] == '"') != (x.t == tStr) {
				return true // a string never equals a number: skip decoding
			}
			found = equal(decodeValue(elem), x)
			return !found
		})
		return found
	}
	return false
}

// lookupPath returns the raw JSON value at path in the object attrs (each
// segment a member of the object before it; the last of repeated keys
// counts), or nil when a segment is missing or its parent is not an
// object.
func lookupPath(attrs []byte, path []string) []byte {
	b := attrs
	for _, seg := range path {
		var found []byte
		if !forEachMember(b, func(key []byte, esc bool, val []byte) bool {
			if k, ok := memberName(key, esc); ok && k == seg {
				found = val
			}
			return true
		}) || found == nil {
			return nil
		}
		b = found
	}
	return b
}

// has implements `x has v`: x (a field's value) equals v, or is one of
// v's elements when v is an array literal; or x is an array with such an
// element.
func has(x, v value) bool {
	match := func(y value) bool {
		if v.t == tArr {
			return contains(v, y)
		}
		return equal(y, v)
	}
	if x.t != tArr {
		return match(x)
	}
	found := false
	forEachElement(aliasBytes(x.str), func(elem []byte) bool {
		found = match(decodeValue(elem))
		return !found
	})
	return found
}

// fold replaces every subtree without fields by its value (so that
// `.t > 1700000000 - 86400` compares .t with one number, which the index
// can use). Array literals stay as they are.
func fold(n *node) *node {
	if n.l != nil {
		n.l = fold(n.l)
	}
	if n.r != nil {
		n.r = fold(n.r)
	}
	if n.op == opNum || n.op == opStr || n.op == opArr || n.op == opField {
		return n
	}
	if !n.l.isConst() && n.l.op != opArr || n.r != nil && !n.r.isConst() && n.r.op != opArr {
		return n
	}
	out := &node{op: opNum, pos: n.pos, height: 1, num: evalNum(n, nil)}
	switch n.op {
	case opNot, opAnd, opOr, opEq, opNe, opIn, opHas, opLt, opLe, opGt, opGe:
		out.isBool = true
	}
	return out
}
