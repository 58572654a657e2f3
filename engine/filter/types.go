package filter

import "strings"

// typeSet is a set of value types. A field's requirement is the set of
// types its value may have for a memory to match; a value outside it (or a
// missing field) makes the whole expression false for that memory.
type typeSet uint8

const (
	tNum typeSet = 1 << iota // a number, or a boolean (as 1 or 0)
	tStr                     // a string
	tArr                     // an array

	tScalar    = tNum | tStr
	tContainer = tStr | tArr
	tAny       = tNum | tStr | tArr
)

func (s typeSet) String() string {
	var parts []string
	if s&tNum != 0 {
		parts = append(parts, "a number")
	}
	if s&tStr != 0 {
		parts = append(parts, "a string")
	}
	if s&tArr != 0 {
		parts = append(parts, "an array")
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, " or ")
}

// check type-checks the tree rooted at n (the rules are in doc.go, "Types")
// and records in e.req what each field must be.
func (e *Expr) check(root *node) error {
	if err := e.typeOf(root); err != nil {
		return err
	}
	return e.demand(root, tNum, "the expression (a condition)")
}

// typeOf checks n's subtrees. Every operator's result is a number (booleans
// included), so only literals and fields have other types.
func (e *Expr) typeOf(n *node) error {
	switch n.op {
	case opNum, opStr, opArr, opField:
		return nil
	case opNot:
		if err := e.typeOf(n.l); err != nil {
			return err
		}
		return e.demand(n.l, tNum, "the operand of not")
	case opNeg:
		if err := e.typeOf(n.l); err != nil {
			return err
		}
		return e.demand(n.l, tNum, `the operand of "-"`)
	}
	if err := e.typeOf(n.l); err != nil {
		return err
	}
	if err := e.typeOf(n.r); err != nil {
		return err
	}
	switch n.op {
	case opEq, opNe:
		return e.checkEquality(n)
	case opIn:
		return e.checkIn(n)
	case opHas:
		return e.checkHas(n)
	case opAnd, opOr:
		if err := e.demand(n.l, tNum, "the operands of "+opText[n.op]); err != nil {
			return err
		}
		return e.demand(n.r, tNum, "the operands of "+opText[n.op])
	default: // arithmetic and ordering
		what := `the operands of "` + opText[n.op] + `"`
		if err := e.demand(n.l, tNum, what); err != nil {
			return err
		}
		return e.demand(n.r, tNum, what)
	}
}

// staticType is the type a non-field node always has.
func staticType(n *node) typeSet {
	switch n.op {
	case opStr:
		return tStr
	case opArr:
		return tArr
	}
	return tNum
}

// checkEquality: == and != compare two scalars. A field compared with a
// literal or computed value must have that value's type; two fields must
// each be a number or a string (of different types they are unequal).
func (e *Expr) checkEquality(n *node) error {
	what := `the operands of "` + opText[n.op] + `"`
	l, r := n.l, n.r
	if l.op == opArr || r.op == opArr {
		a := l
		if r.op == opArr {
			a = r
		}
		return errAt(a.pos, ErrType, "an array can only be the right operand of in")
	}
	switch {
	case l.op == opField && r.op == opField:
		if err := e.demand(l, tScalar, what); err != nil {
			return err
		}
		return e.demand(r, tScalar, what)
	case l.op == opField:
		return e.demand(l, scalarOf(r), what)
	case r.op == opField:
		return e.demand(r, scalarOf(l), what)
	}
	if err := e.demand(l, tScalar, what); err != nil {
		return err
	}
	if err := e.demand(r, tScalar, what); err != nil {
		return err
	}
	if staticType(l) != staticType(r) {
		return errAt(n.pos, ErrType, "cannot compare %s with %s", staticType(l), staticType(r))
	}
	return nil
}

// scalarOf is what a field compared with n must be: n's type if n is a
// scalar, or nothing (an error) if n is an array.
func scalarOf(n *node) typeSet {
	if t := staticType(n); t != tArr {
		return t
	}
	return 0
}

// checkIn: `x in a` tests membership when a is an array (x is then a
// number or a string) and, as in Redis, substring when a is a string (x is
// then a string). A field on the right must be an array or a string.
func (e *Expr) checkIn(n *node) error {
	l, r := n.l, n.r
	switch {
	case r.op == opField:
		if err := e.demand(r, tContainer, "the right operand of in"); err != nil {
			return err
		}
		return e.demand(l, tScalar, "the left operand of in")
	case r.op == opArr:
		return e.demand(l, tScalar, "the left operand of in")
	case r.op == opStr:
		return e.demand(l, tStr, "the left operand of in with a string on the right")
	}
	return errAt(r.pos, ErrType, "the right operand of in must be an array or a string, not a number")
}

// checkHas: `.f has v` (Qdrant's match) is true when field f equals v or
// is an array with an element equal to v; with an array literal v, when f
// (or an element of f) equals any of v's elements. The left operand must
// be a field, the right a string, a number or an array literal; the field
// may then be of v's type (the types of v's elements) or an array.
func (e *Expr) checkHas(n *node) error {
	l, r := n.l, n.r
	if l.op != opField {
		return errAt(l.pos, ErrType, "the left operand of has must be a field")
	}
	if r.op == opField {
		return errAt(r.pos, ErrType, "the right operand of has must be a string, a number or an array, not a field")
	}
	var want typeSet
	if r.op == opArr {
		if len(r.arr) == 0 {
			return errAt(r.pos, ErrType, "the right operand of has must not be an empty array")
		}
		for _, el := range r.arr {
			if el.isStr {
				want |= tStr
			} else {
				want |= tNum
			}
		}
	} else {
		if err := e.typeOfConst(r); err != nil {
			return err
		}
		want = staticType(r)
	}
	return e.demand(l, want|tArr, "the left operand of has")
}

// typeOfConst requires n, the right operand of has, to use no field.
func (e *Expr) typeOfConst(n *node) error {
	if n.op == opField {
		return errAt(n.pos, ErrType, "the right operand of has must not use a field")
	}
	if n.l != nil {
		if err := e.typeOfConst(n.l); err != nil {
			return err
		}
	}
	if n.r != nil {
		return e.typeOfConst(n.r)
	}
	return nil
}

// demand requires n to have a type in want. A field's requirement is
// narrowed (and must not become empty: a field used as a number in one
// place and as a string in another could never match); any other node must
// already have such a type.
func (e *Expr) demand(n *node, want typeSet, what string) error {
	if n.op == opField {
		got := e.req[n.field] & want
		if got == 0 {
			if e.req[n.field] == tAny {
				return errAt(n.pos, ErrType, "%s must be %s", what, want)
			}
			return errAt(n.pos, ErrType, "field .%s is used as %s here but as %s elsewhere: no memory could match",
				e.fields[n.field], want, e.req[n.field])
		}
		e.req[n.field] = got
		return nil
	}
	if t := staticType(n); t&want == 0 {
		if t == tArr {
			return errAt(n.pos, ErrType, "an array can only be the right operand of in")
		}
		return errAt(n.pos, ErrType, "%s must be %s, not %s", what, want, t)
	}
	return nil
}
