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
	var g *roaring.Bitmap
	exact = true
	for i, name := range e.fields {
		fi := ix.fields[name]
		if fi == nil {
			exact = false
			continue
		}
		fit := roaring.New()
		if e.req[i]&tNum != 0 {
			fit.Or(fi.hasNum)
		}
		if e.req[i]&tStr != 0 {
			fit.Or(fi.hasStr)
		}
		if e.req[i]&tArr != 0 {
			fit.Or(fi.hasArr)
		}
		if g == nil {
			g = fit
		} else {
			g.And(fit)
		}
	}
	if g == nil {
		return nil, false, false
	}
	p := planner{ix: ix, e: e, g: g}
	lo, hi := p.bounds(e.root)
	return hi, exact && lo.Equals(hi), true
}

// planner computes bounds within g, the rows where every indexed field has
// a type e allows.
type planner struct {
	ix *Index
	e  *Expr
	g  *roaring.Bitmap // INVARIANT: never modified (results are new bitmaps)
}

// bounds returns lo ⊆ {rows of g where n is true} ⊆ hi ⊆ g, for a rows
// whose every field has an allowed type (for the others n's value does not
// matter: they never match).
func (p *planner) bounds(n *node) (lo, hi *roaring.Bitmap) {
	switch n.op {
	case opAnd:
		llo, lhi := p.bounds(n.l)
		rlo, rhi := p.bounds(n.r)
		return roaring.And(llo, rlo), roaring.And(lhi, rhi)
	case opOr:
		llo, lhi := p.bounds(n.l)
		rlo, rhi := p.bounds(n.r)
		return roaring.Or(llo, rlo), roaring.Or(lhi, rhi)
	case opNot:
		return p.not(p.bounds(n.l))
	case opNum: // a folded constant
		if n.num != 0 {
			return p.g.Clone(), p.g.Clone()
		}
		return roaring.New(), roaring.New()
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
	}
	return roaring.New(), p.g.Clone()
}

// not complements bounds within g.
func (p *planner) not(lo, hi *roaring.Bitmap) (*roaring.Bitmap, *roaring.Bitmap) {
	return roaring.AndNot(p.g, hi), roaring.AndNot(p.g, lo)
}

// within intersects bounds with g.
func (p *planner) within(lo, hi *roaring.Bitmap) (*roaring.Bitmap, *roaring.Bitmap) {
	lo.And(p.g)
	hi.And(p.g)
	return lo, hi
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
	if op == opNe {
		lo, hi = p.not(p.equal(fi, c))
		return lo, hi, true
	}
	if op == opEq {
		lo, hi = p.equal(fi, c)
		return lo, hi, true
	}
	lo, hi = p.within(fi.nums.cmp(op, c.num))
	return lo, hi, true
}

// equal: the rows whose (scalar) value equals the constant c.
func (p *planner) equal(fi *fieldIndex, c *node) (lo, hi *roaring.Bitmap) {
	if c.op == opStr {
		return p.within(posting(fi.strs, c.str), posting(fi.strs, c.str))
	}
	return p.within(fi.nums.cmp(opEq, c.num))
}

// posting returns a copy of m[s], or an empty bitmap.
func posting(m map[string]*roaring.Bitmap, s string) *roaring.Bitmap {
	if b := m[s]; b != nil {
		return b.Clone()
	}
	return roaring.New()
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
		lo, hi = posting(fi.elemStrs, s), posting(fi.elemStrs, s)
		if len(fi.strs) <= maxSubstringScan {
			for v, b := range fi.strs {
				if strings.Contains(v, s) {
					lo.Or(b)
					hi.Or(b)
				}
			}
		} else {
			hi.Or(fi.hasStr)
		}
		lo, hi = p.within(lo, hi)
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
				if b := fi.strs[e.str]; b != nil {
					los, his = append(los, b), append(his, b)
				}
				continue
			}
			elo, ehi := fi.nums.cmp(opEq, e.num)
			los, his = append(los, elo), append(his, ehi)
		}
		lo, hi = p.within(roaring.FastOr(los...), roaring.FastOr(his...))
		return lo, hi, true
	case opStr: // the field's value is a substring of the constant
		if len(fi.strs) > maxSubstringScan {
			return nil, nil, false
		}
		lo = roaring.New()
		for v, b := range fi.strs {
			if strings.Contains(n.r.str, v) {
				lo.Or(b)
			}
		}
		lo, hi = p.within(lo, lo.Clone())
		return lo, hi, true
	}
	return nil, nil, false
}
