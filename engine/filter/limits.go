package filter

import "errors"

// Bounds. Each is checked where the input arrives (Parse, ValidateAttrs), so
// evaluation and planning never meet an expression or an object beyond them:
// recursion in the evaluator and the planner is bounded by MaxDepth.
const (
	// MaxExprLen is the longest expression Parse accepts, in bytes.
	MaxExprLen = 4 << 10
	// MaxDepth is the deepest an expression may nest: the height of its
	// syntax tree (parentheses, unary and binary operators alike).
	MaxDepth = 64
	// MaxArrayLen is the most elements an array literal may hold.
	MaxArrayLen = 1024
	// MaxAttrsLen is the largest attributes object ValidateAttrs accepts,
	// in bytes, before it is compacted.
	MaxAttrsLen = 64 << 10
	// MaxAttrsDepth is the deepest an attributes object may nest arrays
	// and objects (the top-level object is depth 1).
	MaxAttrsDepth = 16
)

// Sentinel errors. Each names the rule it enforces; the errors Parse and
// ValidateAttrs return wrap one of them (match with errors.Is).
var (
	// ErrSyntax: an expression follows the grammar in doc.go. Parse's
	// errors for anything else wrap it too; they are *SyntaxError values
	// that say where.
	ErrSyntax = errors.New("filter: syntax error")
	// ErrType: an expression is well typed (doc.go, "Types"): operands of
	// arithmetic and ordering are numbers, operands of and/or/not are
	// conditions, arrays appear only to the right of in, and every field
	// is used as one type.
	ErrType = errors.New("filter: type error")
	// ErrTooLong: an expression is at most MaxExprLen bytes.
	ErrTooLong = errors.New("filter: expression too long")
	// ErrTooDeep: an expression nests at most MaxDepth levels.
	ErrTooDeep = errors.New("filter: expression nested too deeply")
	// ErrArrayTooLong: an array literal holds at most MaxArrayLen elements.
	ErrArrayTooLong = errors.New("filter: array literal too long")
	// ErrBadAttrs: attributes are a JSON object of at most MaxAttrsLen
	// bytes, nested at most MaxAttrsDepth levels, in valid UTF-8, with
	// unique top-level keys and every number within float64's range.
	ErrBadAttrs = errors.New("invalid attributes")
)
