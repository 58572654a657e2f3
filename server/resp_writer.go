package server

import (
	"bufio"
	"io"
	"math"
	"strconv"
)

// writeBufSize is the size of a Writer's output buffer. Replies larger than
// the free space are written through (bufio does not copy a large write
// into an empty buffer).
const writeBufSize = 16 << 10

// Writer writes RESP2 replies into a buffer. Nothing reaches the
// underlying writer until the buffer fills or Flush is called; the server
// flushes whenever the connection's Reader runs out of buffered input (see
// Reader.SetBeforeBlock) and before closing a connection.
//
// Write errors are sticky: after the first one every method is a no-op and
// Flush returns that error. Handlers therefore need not check errors on
// each call.
//
// A Writer is not safe for concurrent use.
type Writer struct {
	bw      *bufio.Writer
	scratch [64]byte // number formatting without allocation
	n       int64    // bytes accepted so far; lets the server see whether a handler replied
	errs    int64    // error replies written so far; lets the server count failed commands
}

// NewWriter returns a Writer buffering replies for w.
func NewWriter(w io.Writer) *Writer {
	return &Writer{bw: bufio.NewWriterSize(w, writeBufSize)}
}

// Flush writes buffered replies to the underlying writer.
func (w *Writer) Flush() error { return w.bw.Flush() }

// Buffered returns the number of bytes waiting in the buffer.
func (w *Writer) Buffered() int { return w.bw.Buffered() }

// Written returns the number of reply bytes accepted since the Writer was
// created (buffered or flushed).
func (w *Writer) Written() int64 { return w.n }

func (w *Writer) raw(b []byte) {
	w.n += int64(len(b))
	w.bw.Write(b) // error is sticky in bufio.Writer; reported by Flush
}

func (w *Writer) rawString(s string) {
	w.n += int64(len(s))
	w.bw.WriteString(s)
}

// line writes prefix, s with CR and LF replaced by spaces (they would end the
// reply early and desynchronise the client), and "\r\n".
func (w *Writer) line(prefix byte, s string) {
	w.n++
	w.bw.WriteByte(prefix)
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\r' || s[i] == '\n' {
			w.rawString(s[start:i])
			w.rawString(" ")
			start = i + 1
		}
	}
	w.rawString(s[start:])
	w.rawString("\r\n")
}

// WriteSimple writes a simple string reply: "+s\r\n". CR and LF in s are
// replaced by spaces.
func (w *Writer) WriteSimple(s string) { w.line('+', s) }

// WriteOK writes "+OK\r\n".
func (w *Writer) WriteOK() { w.rawString("+OK\r\n") }

// WriteError writes an error reply with the generic code: "-ERR msg\r\n".
// If msg already starts with "ERR " it is not repeated. CR and LF in msg are
// replaced by spaces.
func (w *Writer) WriteError(msg string) {
	if len(msg) >= 4 && msg[:4] == "ERR " {
		msg = msg[4:]
	}
	w.WriteErrorCode("ERR", msg)
}

// WriteErrorCode writes an error reply with a specific Redis error code:
// "-CODE msg\r\n", e.g. WriteErrorCode("WRONGTYPE", "Operation against a
// key holding the wrong kind of value"). An empty code means "ERR".
func (w *Writer) WriteErrorCode(code, msg string) {
	if code == "" {
		code = "ERR"
	}
	w.errs++
	w.line('-', code+" "+msg)
}

// WriteErr writes err as an error reply: a *ReplyError (or an error wrapping
// one) keeps its code, anything else is sent as "-ERR " + err.Error().
func (w *Writer) WriteErr(err error) {
	if re, ok := asReplyError(err); ok {
		w.WriteErrorCode(re.Code, re.Msg)
		return
	}
	w.WriteError(err.Error())
}

// WriteInt writes an integer reply: ":n\r\n".
func (w *Writer) WriteInt(n int64) {
	b := append(w.scratch[:0], ':')
	b = strconv.AppendInt(b, n, 10)
	w.raw(append(b, '\r', '\n'))
}

// header writes "<prefix><n>\r\n".
func (w *Writer) header(prefix byte, n int) {
	b := append(w.scratch[:0], prefix)
	b = strconv.AppendInt(b, int64(n), 10)
	w.raw(append(b, '\r', '\n'))
}

// WriteBulk writes a bulk string reply: "$len\r\nb\r\n". A nil b is written
// as an empty bulk string, not as null; use WriteNull for null.
func (w *Writer) WriteBulk(b []byte) {
	w.header('$', len(b))
	w.raw(b)
	w.rawString("\r\n")
}

// WriteBulkString is WriteBulk for a string.
func (w *Writer) WriteBulkString(s string) {
	w.header('$', len(s))
	w.rawString(s)
	w.rawString("\r\n")
}

// WriteNull writes the RESP2 null bulk string "$-1\r\n" (a missing value;
// clients map it to nil / redis.Nil).
func (w *Writer) WriteNull() { w.rawString("$-1\r\n") }

// WriteNullArray writes the RESP2 null array "*-1\r\n".
func (w *Writer) WriteNullArray() { w.rawString("*-1\r\n") }

// WriteArrayHeader starts an array reply of n elements: "*n\r\n". The
// caller must then write exactly n replies.
func (w *Writer) WriteArrayHeader(n int) { w.header('*', n) }

// WriteFloat64 writes f as a bulk string in the shortest form that parses
// back to the same float64: strconv.FormatFloat(f, 'g', -1, 64), e.g. "0.1",
// "1e+21", "-3". Infinities and NaN are written "inf", "-inf" and "nan", as
// Redis does, so clients' float parsers accept them.
func (w *Writer) WriteFloat64(f float64) { w.writeFloat(f, 64) }

// WriteFloat32 writes f as a bulk string in the shortest form that parses
// back to the same float32: strconv.FormatFloat(float64(f), 'g', -1, 32),
// e.g. float32(0.1) is "0.1", not "0.10000000149011612". Infinities and NaN
// as for WriteFloat64.
func (w *Writer) WriteFloat32(f float32) { w.writeFloat(float64(f), 32) }

func (w *Writer) writeFloat(f float64, bits int) {
	// The digits go in the upper half of scratch; header uses the lower.
	b := w.scratch[32:32]
	switch {
	case math.IsInf(f, 1):
		b = append(b, "inf"...)
	case math.IsInf(f, -1):
		b = append(b, "-inf"...)
	case math.IsNaN(f):
		b = append(b, "nan"...)
	default:
		b = strconv.AppendFloat(b, f, 'g', -1, bits) // at most 24 bytes
	}
	w.header('$', len(b))
	w.raw(b)
	w.rawString("\r\n")
}
