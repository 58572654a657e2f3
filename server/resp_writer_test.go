package server

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"testing"
)

func TestWriterReplies(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.WriteSimple("OK")
	w.WriteSimple("a\r\nb")
	w.WriteOK()
	w.WriteError("boom")
	w.WriteError("ERR already prefixed")
	w.WriteErrorCode("WRONGTYPE", "Operation against a key holding the wrong kind of value")
	w.WriteErrorCode("", "x")
	w.WriteErr(errors.New("plain"))
	w.WriteErr(fmt.Errorf("wrapped: %w", &ReplyError{Code: "NOPROTO", Msg: "unsupported protocol version"}))
	w.WriteInt(0)
	w.WriteInt(-42)
	w.WriteInt(math.MaxInt64)
	w.WriteBulk([]byte("hi\r\n"))
	w.WriteBulk(nil)
	w.WriteBulkString("")
	w.WriteNull()
	w.WriteNullArray()
	w.WriteArrayHeader(2)
	w.WriteArrayHeader(0)
	if buf.Len() != 0 {
		t.Fatalf("wrote %d bytes before Flush", buf.Len())
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "+OK\r\n+a  b\r\n+OK\r\n-ERR boom\r\n-ERR already prefixed\r\n" +
		"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n-ERR x\r\n" +
		"-ERR plain\r\n-NOPROTO unsupported protocol version\r\n" +
		":0\r\n:-42\r\n:9223372036854775807\r\n$4\r\nhi\r\n\r\n$0\r\n\r\n$0\r\n\r\n$-1\r\n*-1\r\n*2\r\n*0\r\n"
	if got := buf.String(); got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	if w.Written() != int64(len(want)) {
		t.Fatalf("Written = %d, want %d", w.Written(), len(want))
	}
}

func TestWriterFloats(t *testing.T) {
	tests := []struct {
		f32  bool
		f    float64
		want string
	}{
		{false, 0.1, "0.1"},
		{false, 1, "1"},
		{false, -3.5, "-3.5"},
		{false, 1e21, "1e+21"},
		{false, 1.0 / 3, "0.3333333333333333"},
		{true, float64(float32(0.1)), "0.1"},
		{true, float64(float32(1.0 / 3)), "0.33333334"},
		{false, math.Inf(1), "inf"},
		{false, math.Inf(-1), "-inf"},
		{false, math.NaN(), "nan"},
		{true, math.Inf(1), "inf"},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		w := NewWriter(&buf)
		if tt.f32 {
			w.WriteFloat32(float32(tt.f))
		} else {
			w.WriteFloat64(tt.f)
		}
		w.Flush()
		want := "$" + strconv.Itoa(len(tt.want)) + "\r\n" + tt.want + "\r\n"
		if buf.String() != want {
			t.Errorf("%v (f32=%v): got %q, want %q", tt.f, tt.f32, buf.String(), want)
		}
	}
	// Shortest formatting round-trips exactly.
	for _, f := range []float64{0.1, 1e-300, 123456.789, math.MaxFloat64, math.SmallestNonzeroFloat64} {
		var buf bytes.Buffer
		w := NewWriter(&buf)
		w.WriteFloat64(f)
		w.Flush()
		rd := NewReader(bytes.NewReader(append([]byte("*1\r\n"), buf.Bytes()...)), Limits{})
		args, err := rd.ReadCommand()
		if err != nil {
			t.Fatal(err)
		}
		if g, _ := strconv.ParseFloat(string(args[0]), 64); g != f {
			t.Errorf("%v round-trips as %v", f, g)
		}
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	f.n++
	return 0, errors.New("broken pipe")
}

func TestWriterStickyError(t *testing.T) {
	fw := &failWriter{}
	w := NewWriter(fw)
	w.WriteSimple("x")
	if err := w.Flush(); err == nil {
		t.Fatal("Flush succeeded on a failing writer")
	}
	w.WriteBulk(bytes.Repeat([]byte("x"), 100_000))
	if err := w.Flush(); err == nil {
		t.Fatal("error not sticky")
	}
	if fw.n != 1 {
		t.Fatalf("underlying writer called %d times after failing", fw.n)
	}
}
