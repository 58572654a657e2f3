package filter

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// SyntaxError is what Parse returns for an expression it refuses: what is
// wrong, and where. Kind is one of the package's sentinel errors (ErrSyntax,
// ErrType, ErrTooLong, ErrTooDeep, ErrArrayTooLong), so errors.Is works.
type SyntaxError struct {
	Col  int    // 1-based column, counted in bytes; len(expr)+1 for the end
	Msg  string // what is wrong, e.g. `unexpected ")"`
	Kind error  // the rule broken
}

// Error formats the error as `filter: <msg> at column <col>`.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("filter: %s at column %d", e.Msg, e.Col)
}

// Unwrap returns Kind.
func (e *SyntaxError) Unwrap() error { return e.Kind }

// tokKind is the kind of a lexical token.
type tokKind uint8

const (
	tokEOF tokKind = iota
	tokNum
	tokStr
	tokSel   // .field
	tokOp    // an operator or punctuation: text holds it, e.g. "<=", "(", ","
	tokWord  // a keyword: and or not in true false
	tokError // never returned: lexing errors are *SyntaxError
)

// token is one lexical token. pos is its 0-based byte offset.
type token struct {
	kind tokKind
	pos  int
	text string  // operator or keyword text; a selector's field name; a string's decoded value
	num  float64 // tokNum
}

// describe names a token for an error message.
func (t token) describe() string {
	switch t.kind {
	case tokEOF:
		return "end of expression"
	case tokNum:
		return "number"
	case tokStr:
		return "string"
	case tokSel:
		return strconv.Quote("." + t.text)
	}
	return strconv.Quote(t.text)
}

// lexer splits an expression into tokens, one at a time.
type lexer struct {
	src string
	pos int
}

// operators, longest first so that "**" wins over "*" and "<=" over "<".
var operators = []string{"**", "==", "!=", "<=", ">=", "&&", "||",
	"+", "-", "*", "/", "%", "<", ">", "!", "(", ")", "[", "]", ","}

var keywords = map[string]bool{"and": true, "or": true, "not": true, "in": true, "has": true, "true": true, "false": true}

func isSelectorByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func errAt(pos int, kind error, format string, args ...any) *SyntaxError {
	return &SyntaxError{Col: pos + 1, Msg: fmt.Sprintf(format, args...), Kind: kind}
}

// next returns the next token, or a *SyntaxError.
func (l *lexer) next() (token, error) {
	for l.pos < len(l.src) && (l.src[l.pos] == ' ' || l.src[l.pos] == '\t' || l.src[l.pos] == '\n' || l.src[l.pos] == '\r') {
		l.pos++
	}
	start := l.pos
	if start >= len(l.src) {
		return token{kind: tokEOF, pos: start}, nil
	}
	c := l.src[start]
	switch {
	case isDigit(c):
		return l.number()
	case c == '"' || c == '\'':
		return l.str()
	case c == '.':
		end := start + 1
		// A path into nested objects: .meta.source, each segment a
		// field name of selector bytes.
		for {
			seg := end
			for end < len(l.src) && isSelectorByte(l.src[end]) {
				end++
			}
			if end == seg {
				return token{}, errAt(seg-1, ErrSyntax, `"." must be followed by a field name`)
			}
			if end >= len(l.src) || l.src[end] != '.' {
				break
			}
			end++
		}
		l.pos = end
		return token{kind: tokSel, pos: start, text: l.src[start+1 : end]}, nil
	case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_':
		end := start
		for end < len(l.src) && isWordByte(l.src[end]) {
			end++
		}
		w := l.src[start:end]
		if !keywords[w] {
			return token{}, errAt(start, ErrSyntax, "unknown word %q (fields are written .%s)", w, w)
		}
		l.pos = end
		return token{kind: tokWord, pos: start, text: w}, nil
	}
	for _, op := range operators {
		if strings.HasPrefix(l.src[start:], op) {
			l.pos = start + len(op)
			return token{kind: tokOp, pos: start, text: op}, nil
		}
	}
	r, _ := utf8.DecodeRuneInString(l.src[start:])
	return token{}, errAt(start, ErrSyntax, "unexpected character %q", r)
}

// number lexes digits [ "." digits ] [ ("e"|"E") ["+"|"-"] digits ].
func (l *lexer) number() (token, error) {
	start, i := l.pos, l.pos
	for i < len(l.src) && isDigit(l.src[i]) {
		i++
	}
	if i < len(l.src) && l.src[i] == '.' {
		i++
		d := i
		for i < len(l.src) && isDigit(l.src[i]) {
			i++
		}
		if i == d {
			return token{}, errAt(start, ErrSyntax, "malformed number %q", l.src[start:i])
		}
	}
	if i < len(l.src) && (l.src[i] == 'e' || l.src[i] == 'E') {
		i++
		if i < len(l.src) && (l.src[i] == '+' || l.src[i] == '-') {
			i++
		}
		d := i
		for i < len(l.src) && isDigit(l.src[i]) {
			i++
		}
		if i == d {
			return token{}, errAt(start, ErrSyntax, "malformed number %q", l.src[start:i])
		}
	}
	if i < len(l.src) && (isWordByte(l.src[i]) || l.src[i] == '.') {
		return token{}, errAt(start, ErrSyntax, "malformed number %q", l.src[start:i+1])
	}
	v, err := strconv.ParseFloat(l.src[start:i], 64)
	if err != nil { // only ErrRange: the syntax was checked above
		return token{}, errAt(start, ErrSyntax, "number %s out of range", l.src[start:i])
	}
	l.pos = i
	return token{kind: tokNum, pos: start, num: v}, nil
}

// str lexes a string in double or single quotes. Escapes are JSON's
// (\" \\ \/ \b \f \n \r \t \uXXXX, surrogate pairs included) plus \'.
func (l *lexer) str() (token, error) {
	start := l.pos
	quote := l.src[start]
	var b strings.Builder
	i := start + 1
	for {
		if i >= len(l.src) {
			return token{}, errAt(start, ErrSyntax, "unterminated string")
		}
		c := l.src[i]
		if c == quote {
			l.pos = i + 1
			return token{kind: tokStr, pos: start, text: b.String()}, nil
		}
		if c != '\\' {
			b.WriteByte(c)
			i++
			continue
		}
		if i+1 >= len(l.src) {
			return token{}, errAt(start, ErrSyntax, "unterminated string")
		}
		e := l.src[i+1]
		switch e {
		case '"', '\'', '\\', '/':
			b.WriteByte(e)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, n, ok := decodeUEscape(l.src[i:])
			if !ok {
				return token{}, errAt(i, ErrSyntax, `malformed \u escape`)
			}
			b.WriteRune(r)
			i += n
			continue
		default:
			return token{}, errAt(i, ErrSyntax, "unknown escape %q", l.src[i:i+2])
		}
		i += 2
	}
}

// decodeUEscape decodes `\uXXXX` (and a following `\uXXXX` low surrogate)
// at the start of s, as JSON does: a lone surrogate becomes U+FFFD. It
// returns the rune and the bytes consumed.
func decodeUEscape(s string) (rune, int, bool) {
	r, ok := hex4(s)
	if !ok {
		return 0, 0, false
	}
	if r >= 0xD800 && r < 0xDC00 {
		if lo, ok := hex4(s[6:]); ok && lo >= 0xDC00 && lo < 0xE000 {
			return (r-0xD800)<<10 + (lo - 0xDC00) + 0x10000, 12, true
		}
		return utf8.RuneError, 6, true
	}
	if r >= 0xDC00 && r < 0xE000 {
		return utf8.RuneError, 6, true
	}
	return r, 6, true
}

// hex4 reads `\uXXXX` at the start of s.
func hex4(s string) (rune, bool) {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[2:6]) {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
