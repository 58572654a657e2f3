package filter

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// opcode is what a syntax tree node does.
type opcode uint8

const (
	opNum   opcode = iota // number literal (booleans too: num 1 or 0, isBool)
	opStr                 // string literal
	opArr                 // array literal
	opField               // .field
	opNot
	opNeg
	opAdd
	opSub
	opMul
	opDiv
	opMod
	opPow
	opEq
	opNe
	opLt
	opLe
	opGt
	opGe
	opIn
	opHas
	opAnd
	opOr
)

// opText is each binary operator's canonical spelling (what String writes).
var opText = [...]string{
	opAdd: "+", opSub: "-", opMul: "*", opDiv: "/", opMod: "%", opPow: "**",
	opEq: "==", opNe: "!=", opLt: "<", opLe: "<=", opGt: ">", opGe: ">=",
	opIn: "in", opHas: "has", opAnd: "and", opOr: "or",
}

// node is a node of an expression's syntax tree. Trees are immutable once
// Parse returns, so one Expr may be evaluated by many goroutines at once.
type node struct {
	op     opcode
	pos    int     // 0-based byte offset in the source, for errors
	height int     // 1 for a leaf; INVARIANT: at most MaxDepth
	num    float64 // opNum
	isBool bool    // opNum written true or false
	str    string  // opStr
	arr    []lit   // opArr
	field  int     // opField: index into Expr.fields
	l, r   *node   // operands; unary operators use l
}

// lit is an element of an array literal: a number (or boolean) or a string.
type lit struct {
	isStr  bool
	isBool bool
	num    float64
	str    string
}

func (n *node) isConst() bool { return n.op == opNum || n.op == opStr }

// write appends the canonical, fully parenthesized text of n to b.
// Parse(e.String()) gives back an expression with the same String.
func (n *node) write(b *strings.Builder, fields []string) {
	switch n.op {
	case opNum:
		writeNum(b, n.num, n.isBool)
	case opStr:
		writeStr(b, n.str)
	case opArr:
		b.WriteByte('[')
		for i, e := range n.arr {
			if i > 0 {
				b.WriteString(", ")
			}
			if e.isStr {
				writeStr(b, e.str)
			} else {
				writeNum(b, e.num, e.isBool)
			}
		}
		b.WriteByte(']')
	case opField:
		b.WriteByte('.')
		b.WriteString(fields[n.field])
	case opNot:
		b.WriteString("(not ")
		n.l.write(b, fields)
		b.WriteByte(')')
	case opNeg:
		b.WriteString("(-")
		n.l.write(b, fields)
		b.WriteByte(')')
	default:
		b.WriteByte('(')
		n.l.write(b, fields)
		b.WriteByte(' ')
		b.WriteString(opText[n.op])
		b.WriteByte(' ')
		n.r.write(b, fields)
		b.WriteByte(')')
	}
}

// writeNum writes a number so that the lexer reads it back exactly:
// infinities and NaN (results of folded constants such as 1/0) as the
// divisions that make them.
func writeNum(b *strings.Builder, v float64, isBool bool) {
	switch {
	case isBool && v != 0:
		b.WriteString("true")
	case isBool:
		b.WriteString("false")
	case math.IsNaN(v):
		b.WriteString("(0 / 0)")
	case math.IsInf(v, 1):
		b.WriteString("(1 / 0)")
	case math.IsInf(v, -1):
		b.WriteString("(-1 / 0)")
	case v == math.Trunc(v) && math.Abs(v) < 1e21:
		b.WriteString(strconv.FormatFloat(v, 'f', -1, 64)) // integers in full, as written
	default:
		b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
	}
}

// writeStr writes s in double quotes with the escapes the lexer reads.
// Bytes that are not valid UTF-8 are written as they are (the lexer keeps
// a string's bytes verbatim).
func writeStr(b *strings.Builder, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\r':
			b.WriteString(`\r`)
		case c < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		case c < utf8.RuneSelf:
			b.WriteByte(c)
		default:
			_, size := utf8.DecodeRuneInString(s[i:])
			b.WriteString(s[i : i+size])
			i += size
			continue
		}
		i++
	}
	b.WriteByte('"')
}
