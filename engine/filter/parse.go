package filter

import (
	"strings"
)

// Expr is a parsed, type-checked filter expression. Parse it once and
// evaluate it many times; an Expr is immutable, so it is safe for
// concurrent use by many goroutines.
type Expr struct {
	root   *node
	fields []string  // the distinct fields referenced, in order of first use
	req    []typeSet // req[i]: the types fields[i] must have for a memory to match
	str    string    // the canonical text (String)
	index  map[string]int
	// paths[i] is fields[i] split at its dots when it is a path into
	// nested objects (.meta.source), nil for a top-level field; nested
	// lists the indexes of such fields.
	paths  [][]string
	nested []int
}

// Fields returns the names of the attributes e references, in order of
// first use: top-level names, or paths into nested objects with their
// segments joined by dots ("meta.source"). The caller must not modify the
// slice.
func (e *Expr) Fields() []string { return e.fields }

// String returns e's canonical text: fully parenthesized, constants folded.
// Parse(e.String()) succeeds and has the same String.
func (e *Expr) String() string { return e.str }

// Parse parses and type-checks a filter expression (the language is
// specified in doc.go). Errors are *SyntaxError values that say where the
// expression went wrong, and wrap ErrSyntax, ErrType, ErrTooLong,
// ErrTooDeep or ErrArrayTooLong.
func Parse(src string) (*Expr, error) {
	if len(src) > MaxExprLen {
		return nil, &SyntaxError{Col: MaxExprLen + 1, Msg: "expression longer than 4096 bytes", Kind: ErrTooLong}
	}
	p := &parser{lex: lexer{src: src}, e: &Expr{index: map[string]int{}}}
	if err := p.advance(); err != nil {
		return nil, err
	}
	if p.tok.kind == tokEOF {
		return nil, errAt(p.tok.pos, ErrSyntax, "empty expression")
	}
	root, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tokEOF {
		return nil, p.unexpected()
	}
	if err := p.e.check(root); err != nil {
		return nil, err
	}
	p.e.root = fold(root)
	var b strings.Builder
	p.e.root.write(&b, p.e.fields)
	p.e.str = b.String()
	return p.e, nil
}

// parser is a recursive-descent parser with one token of look-ahead.
type parser struct {
	lex   lexer
	tok   token
	depth int // current recursion depth; INVARIANT: at most maxRecursion
	e     *Expr
}

func (p *parser) advance() error {
	t, err := p.lex.next()
	if err != nil {
		return err
	}
	p.tok = t
	return nil
}

func (p *parser) unexpected() error {
	return errAt(p.tok.pos, ErrSyntax, "unexpected %s", p.tok.describe())
}

func (p *parser) isOp(texts ...string) bool {
	if p.tok.kind != tokOp && p.tok.kind != tokWord {
		return false
	}
	for _, t := range texts {
		if p.tok.text == t {
			return true
		}
	}
	return false
}

// maxRecursion bounds the parser's recursion: parsePower and parseUnary
// each count one level, so parentheses may nest about MaxDepth deep
// (the tree's height is bounded by MaxDepth separately, in binary).
const maxRecursion = 2*MaxDepth + 2

// enter and leave bound the parser's recursion, so that no input can make
// it (or, later, the evaluator) recurse without bound.
func (p *parser) enter() error {
	p.depth++
	if p.depth > maxRecursion {
		return errAt(p.tok.pos, ErrTooDeep, "expression nested deeper than %d levels", MaxDepth)
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

// binary makes a binary node, refusing trees taller than MaxDepth.
func (p *parser) binary(op opcode, pos int, l, r *node) (*node, error) {
	h := max(l.height, r.height) + 1
	if h > MaxDepth {
		return nil, errAt(pos, ErrTooDeep, "expression nested deeper than %d levels", MaxDepth)
	}
	return &node{op: op, pos: pos, l: l, r: r, height: h}, nil
}

// parseOr: and { ("or" | "||") and }
func (p *parser) parseOr() (*node, error) {
	return p.leftAssoc(p.parseAnd, orOps)
}

// parseAnd: cmp { ("and" | "&&") cmp }
func (p *parser) parseAnd() (*node, error) {
	return p.leftAssoc(p.parseCmp, andOps)
}

// The binary operators of each precedence level, by spelling.
var (
	orOps      = map[string]opcode{"or": opOr, "||": opOr}
	andOps     = map[string]opcode{"and": opAnd, "&&": opAnd}
	sumOps     = map[string]opcode{"+": opAdd, "-": opSub}
	productOps = map[string]opcode{"*": opMul, "/": opDiv, "%": opMod}
)

var cmpOps = map[string]opcode{"==": opEq, "!=": opNe, "<": opLt, "<=": opLe, ">": opGt, ">=": opGe, "in": opIn, "has": opHas}

// parseCmp: sum [ cmpop sum ]. Comparisons do not chain: `1 < .a < 3`
// is an error rather than JavaScript's (1 < .a) < 3.
func (p *parser) parseCmp() (*node, error) {
	l, err := p.parseSum()
	if err != nil {
		return nil, err
	}
	op, ok := cmpOps[p.tok.text]
	if !ok || (p.tok.kind != tokOp && p.tok.kind != tokWord) {
		return l, nil
	}
	pos := p.tok.pos
	if err := p.advance(); err != nil {
		return nil, err
	}
	r, err := p.parseSum()
	if err != nil {
		return nil, err
	}
	if _, again := cmpOps[p.tok.text]; again && (p.tok.kind == tokOp || p.tok.kind == tokWord) {
		return nil, errAt(p.tok.pos, ErrSyntax, "comparisons do not chain: use and, or parentheses")
	}
	return p.binary(op, pos, l, r)
}

// parseSum: product { ("+" | "-") product }
func (p *parser) parseSum() (*node, error) {
	return p.leftAssoc(p.parseProduct, sumOps)
}

// parseProduct: power { ("*" | "/" | "%") power }
func (p *parser) parseProduct() (*node, error) {
	return p.leftAssoc(p.parsePower, productOps)
}

// leftAssoc parses operand { op operand } for the operators in ops.
func (p *parser) leftAssoc(operand func() (*node, error), ops map[string]opcode) (*node, error) {
	l, err := operand()
	if err != nil {
		return nil, err
	}
	for p.tok.kind == tokOp || p.tok.kind == tokWord {
		op, ok := ops[p.tok.text]
		if !ok {
			break
		}
		pos := p.tok.pos
		if err := p.advance(); err != nil {
			return nil, err
		}
		r, err := operand()
		if err != nil {
			return nil, err
		}
		if l, err = p.binary(op, pos, l, r); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// parsePower: unary [ "**" power ] (right-associative: 2**3**2 is 2**9).
func (p *parser) parsePower() (*node, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	l, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	if !p.isOp("**") {
		return l, nil
	}
	pos := p.tok.pos
	if err := p.advance(); err != nil {
		return nil, err
	}
	r, err := p.parsePower()
	if err != nil {
		return nil, err
	}
	return p.binary(opPow, pos, l, r)
}

// parseUnary: ("not" | "!" | "-") unary | primary. As in Redis, not binds
// tighter than every binary operator: `not .a == 1` is `(not .a) == 1`.
func (p *parser) parseUnary() (*node, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	var op opcode
	switch {
	case p.isOp("not", "!"):
		op = opNot
	case p.isOp("-"):
		op = opNeg
	default:
		return p.parsePrimary()
	}
	pos := p.tok.pos
	if err := p.advance(); err != nil {
		return nil, err
	}
	x, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	if x.height+1 > MaxDepth {
		return nil, errAt(pos, ErrTooDeep, "expression nested deeper than %d levels", MaxDepth)
	}
	return &node{op: op, pos: pos, l: x, height: x.height + 1}, nil
}

// parsePrimary: number | string | "true" | "false" | array | selector | "(" expr ")"
func (p *parser) parsePrimary() (*node, error) {
	t := p.tok
	var n *node
	switch {
	case t.kind == tokNum:
		n = &node{op: opNum, num: t.num}
	case t.kind == tokStr:
		n = &node{op: opStr, str: t.text}
	case t.kind == tokWord && (t.text == "true" || t.text == "false"):
		n = &node{op: opNum, isBool: true}
		if t.text == "true" {
			n.num = 1
		}
	case t.kind == tokSel:
		i, ok := p.e.index[t.text]
		if !ok {
			i = len(p.e.fields)
			p.e.index[t.text] = i
			p.e.fields = append(p.e.fields, t.text)
			p.e.req = append(p.e.req, tAny)
			var path []string
			if strings.Contains(t.text, ".") {
				path = strings.Split(t.text, ".")
				p.e.nested = append(p.e.nested, i)
			}
			p.e.paths = append(p.e.paths, path)
		}
		n = &node{op: opField, field: i}
	case p.isOp("["):
		return p.parseArray()
	case p.isOp("("):
		if err := p.advance(); err != nil {
			return nil, err
		}
		x, err := p.parseOr()
		if err != nil {
			return nil, err
		}
		if !p.isOp(")") {
			if p.tok.kind == tokEOF {
				return nil, errAt(t.pos, ErrSyntax, `unclosed "("`)
			}
			return nil, p.unexpected()
		}
		return x, p.advance()
	default:
		return nil, p.unexpected()
	}
	n.pos, n.height = t.pos, 1
	return n, p.advance()
}

// parseArray: "[" [ element { "," element } ] "]", element = ["-"] number |
// string | "true" | "false".
func (p *parser) parseArray() (*node, error) {
	n := &node{op: opArr, pos: p.tok.pos, height: 1}
	if err := p.advance(); err != nil {
		return nil, err
	}
	if p.isOp("]") {
		return n, p.advance()
	}
	for {
		neg := false
		if p.isOp("-") {
			neg = true
			if err := p.advance(); err != nil {
				return nil, err
			}
		}
		t := p.tok
		var e lit
		switch {
		case t.kind == tokNum:
			e.num = t.num
			if neg {
				e.num = -e.num
			}
		case neg:
			return nil, p.unexpected()
		case t.kind == tokStr:
			e.isStr, e.str = true, t.text
		case t.kind == tokWord && (t.text == "true" || t.text == "false"):
			e.isBool = true
			if t.text == "true" {
				e.num = 1
			}
		default:
			if t.kind == tokEOF {
				return nil, errAt(n.pos, ErrSyntax, `unclosed "["`)
			}
			return nil, errAt(t.pos, ErrSyntax, "unexpected %s in an array (elements are numbers, strings, true or false)", t.describe())
		}
		if len(n.arr) == MaxArrayLen {
			return nil, errAt(t.pos, ErrArrayTooLong, "array literal longer than %d elements", MaxArrayLen)
		}
		n.arr = append(n.arr, e)
		if err := p.advance(); err != nil {
			return nil, err
		}
		if p.isOp("]") {
			return n, p.advance()
		}
		if !p.isOp(",") {
			if p.tok.kind == tokEOF {
				return nil, errAt(n.pos, ErrSyntax, `unclosed "["`)
			}
			return nil, p.unexpected()
		}
		if err := p.advance(); err != nil {
			return nil, err
		}
	}
}
