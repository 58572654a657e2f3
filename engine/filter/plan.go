package filter

import (
	"strings"

	"github.com/RoaringBitmap/roaring/v2"
)

// maxSubstringScan bounds how many distinct string values Plan tests one by
// one for a substring `in`; past it the field's string rows are all
// candidates (inexact).
const maxSubstringScan = 4096

// Plan narrows e with the index. ok is false when no field e uses is
// indexed: the index cannot help, and every row must be checked with
// Match. Otherwise rows (a new bitmap the caller owns) holds every row
// that matches e, and perhaps others; exact says it holds exactly those
// (no Match needed). Rows without attributes are never in rows: the caller
// handles them if e can match without fields (it cannot when ok is true).
//
// How (doc.go's "What matches" makes this sound): a row matches only if
// every field e uses has a type e allows, so rows starts as the rows
// where each indexed field has such a type; exact if every field e uses
// is indexed. Then each comparison of an indexed field with a constant,
// each `in` with one, and and, or, not over them, give two bitmaps: the
// rows known to satisfy it and the rows that may; anything else (an
// unindexed field, arithmetic on a field, two fields compared) knows
// nothing. not works within rows, so no universe is needed.
func (ix *Index) Plan(e *Expr) (rows *roaring.Bitmap, exact, ok bool) {
	var fits []*roaring.Bitmap
	exact = true
	for i, name := range e.fields {
		fi := ix.fields[name]
		if fi == nil {
			exact = false
			continue
		}
		var parts []*roaring.Bitmap
		if e.req[i]&tNum != 0 {
			parts = append(parts, fi.hasNum)
		}
		if e.req[i]&tStr != 0 {
			parts = append(parts, fi.hasStr)
		}
		if e.req[i]&tArr != 0 {
			parts = append(parts, fi.hasArr)
		}
		fits = append(fits, orAll(parts))
	}
	if len(fits) == 0 {
		return nil, false, false
	}
	// g is new: FastAnd of one bitmap would alias it.
	g := roaring.FastAnd(fits...)
	if len(fits) == 1 {
		g = fits[0].Clone()
	}
	p := planner{ix: ix, e: e, g: g}
	lo, hi := p.bounds(e.root)
	return hi, exact && (lo == hi || lo.Equals(hi)), true
}

// orAll is the union of bms, aliasing bms[0] when it is the only one.
// The result is read-only.
func orAll(bms []*roaring.Bitmap) *roaring.Bitmap {
	switch len(bms) {
	case 0:
		return roaring.New()
	case 1:
		return bms[0]
	}
	return roaring.FastOr(bms...)
}

// planner computes bounds within g, the rows where every indexed field has
// a type e allows.
//
// Bounds are read-only: a bitmap may be shared by lo and hi, by several
// nodes, or be g itself, so every combination makes a new bitmap
// (roaring.And, Or, AndNot) and none is modified in place. Leaves pass
// through within, so no bound aliases the index's own bitmaps.
type planner struct {
	ix *Index
	e  *Expr
	g  *roaring.Bitmap
}

// bounds returns lo ⊆ {rows of g where n is true} ⊆ hi ⊆ g, for the rows
// whose every field has an allowed type (for the others n's value does not
// matter: they never match). lo == hi (the same pointer) when n is known
// exactly.
func (p *planner) bounds(n *node) (lo, hi *roaring.Bitmap) {
	switch n.op {
	case opAnd:
		llo, lhi := p.bounds(n.l)
		rlo, rhi := p.bounds(n.r)
		return combine(roaring.And, llo, lhi, rlo, rhi)
	case opOr:
		llo, lhi := p.bounds(n.l)
		rlo, rhi := p.bounds(n.r)
		return combine(roaring.Or, llo, lhi, rlo, rhi)
	case opNot:
		return p.not(p.bounds(n.l))
	case opNum: // a folded constant
		if n.num != 0 {
			return p.g, p.g
		}
		empty := roaring.New()
		return empty, empty
	case opField: // a number as a condition: true unless 0
		if fi := p.field(n); fi != nil {
			return p.not(p.within(fi.nums.cmp(opEq, 0)))
		}
	case opEq, opNe, opLt, opLe, opGt, opGe:
		if lo, hi, ok := p.comparison(n); ok {
			return lo, hi
		}
	case opIn:
		if lo, hi, ok := p.in(n); ok {
			return lo, hi
		}
	case opHas:
		if lo, hi, ok := p.has(n); ok {
			return lo, hi
		}
	}
	return roaring.New(), p.g
}

// combine applies op to the lower and to the upper bounds, once when both
// operands are exact.
func combine(op func(a, b *roaring.Bitmap) *roaring.Bitmap, llo, lhi, rlo, rhi *roaring.Bitmap) (*roaring.Bitmap, *roaring.Bitmap) {
	if llo == lhi && rlo == rhi {
		x := op(llo, rlo)
		return x, x
	}
	return op(llo, rlo), op(lhi, rhi)
}

// not complements bounds within g.
func (p *planner) not(lo, hi *roaring.Bitmap) (*roaring.Bitmap, *roaring.Bitmap) {
	if lo == hi {
		x := roaring.AndNot(p.g, lo)
		return x, x
	}
	return roaring.AndNot(p.g, hi), roaring.AndNot(p.g, lo)
}

// within intersects bounds (which may be the index's own bitmaps) with g.
func (p *planner) within(lo, hi *roaring.Bitmap) (*roaring.Bitmap, *roaring.Bitmap) {
	if lo == hi {
		x := roaring.And(lo, p.g)
		return x, x
	}
	return roaring.And(lo, p.g), roaring.And(hi, p.g)
}

// field returns n's index if n is an indexed field.
func (p *planner) field(n *node) *fieldIndex {
	if n.op != opField {
		return nil
	}
	return p.ix.fields[p.e.fields[n.field]]
}

// mirror is the operator that holds with its operands swapped.
var mirror = map[opcode]opcode{opEq: opEq, opNe: opNe, opLt: opGt, opLe: opGe, opGt: opLt, opGe: opLe}

// comparison handles an indexed field compared with a constant.
func (p *planner) comparison(n *node) (lo, hi *roaring.Bitmap, ok bool) {
	op, f, c := n.op, n.l, n.r
	if p.field(f) == nil {
		op, f, c = mirror[n.op], n.r, n.l
	}
	fi := p.field(f)
	if fi == nil || !c.isConst() {
		return nil, nil, false
	}
	switch op {
	case opNe:
		lo, hi = p.not(p.equal(fi, c))
	case opEq:
		lo, hi = p.equal(fi, c)
	default:
		lo, hi = p.within(fi.nums.cmp(op, c.num))
	}
	return lo, hi, true
}

// equal: the rows whose (scalar) value equals the constant c.
func (p *planner) equal(fi *fieldIndex, c *node) (lo, hi *roaring.Bitmap) {
	if c.op == opStr {
		b := fi.strs.get(c.str)
		return p.within(b, b)
	}
	return p.within(fi.nums.cmp(opEq, c.num))
}

// in handles `const in .field`, `.field in [array]` and `.field in "string"`.
func (p *planner) in(n *node) (lo, hi *roaring.Bitmap, ok bool) {
	if fi := p.field(n.r); fi != nil && n.l.isConst() {
		if n.l.op == opNum { // a number: only in arrays
			lo, hi = p.within(fi.elemNums.cmp(opEq, n.l.num))
			return lo, hi, true
		}
		// A string: an element of array values, or a substring of
		// string values.
		s := n.l.str
		parts := []*roaring.Bitmap{fi.elemStrs.get(s)}
		if fi.strs.len() > maxSubstringScan {
			lo, hi = p.within(parts[0], orAll(append(parts, fi.hasStr)))
			return lo, hi, true
		}
		fi.strs.each(func(v string, b *roaring.Bitmap) bool {
			if strings.Contains(v, s) {
				parts = append(parts, b)
			}
			return true
		})
		b := orAll(parts)
		lo, hi = p.within(b, b)
		return lo, hi, true
	}
	fi := p.field(n.l)
	if fi == nil {
		return nil, nil, false
	}
	switch n.r.op {
	case opArr:
		var los, his []*roaring.Bitmap
		for _, e := range n.r.arr {
			if e.isStr {
				if b, ok := fi.strs.lookup(e.str); ok {
					los, his = append(los, b), append(his, b)
				}
				continue
			}
			elo, ehi := fi.nums.cmp(opEq, e.num)
			los, his = append(los, elo), append(his, ehi)
		}
		lo, hi = orAll(los), orAll(his)
		if len(los) == len(his) && slicesEqual(los, his) {
			hi = lo
		}
		lo, hi = p.within(lo, hi)
		return lo, hi, true
	case opStr: // the field's value is a substring of the constant
		if fi.strs.len() > maxSubstringScan {
			return nil, nil, false
		}
		var parts []*roaring.Bitmap
		fi.strs.each(func(v string, b *roaring.Bitmap) bool {
			if strings.Contains(n.r.str, v) {
				parts = append(parts, b)
			}
			return true
		})
		b := orAll(parts)
		lo, hi = p.within(b, b)
		return lo, hi, true
	}
	return nil, nil, false
}

// has handles `.field has v`: the rows whose value equals v (each of v's
// elements, for an array) or whose array holds it.
func (p *planner) has(n *node) (lo, hi *roaring.Bitmap, ok bool) {
	fi := p.field(n.l)
	if fi == nil {
		return nil, nil, false
	}
	var los, his []*roaring.Bitmap
	add := func(isStr bool, s string, num float64) {
		if isStr {
			a, b := fi.strs.get(s), fi.elemStrs.get(s)
			los, his = append(los, a, b), append(his, a, b)
			return
		}
		alo, ahi := fi.nums.cmp(opEq, num)
		blo, bhi := fi.elemNums.cmp(opEq, num)
		los, his = append(los, alo, blo), append(his, ahi, bhi)
	}
	switch n.r.op {
	case opStr:
		add(true, n.r.str, 0)
	case opNum:
		add(false, "", n.r.num)
	case opArr:
		for _, e := range n.r.arr {
			add(e.isStr, e.str, e.num)
		}
	default:
		return nil, nil, false
	}
	lo, hi = roaring.FastOr(los...), roaring.FastOr(his...)
	if slicesEqual(los, his) {
		hi = lo
	}
	lo, hi = p.within(lo, hi)
	return lo, hi, true
}

func slicesEqual(a, b []*roaring.Bitmap) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
