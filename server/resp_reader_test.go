package server

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// readAll reads commands until an error and returns them as strings.
func readAll(t *testing.T, rd *Reader) ([][]string, error) {
	t.Helper()
	var out [][]string
	for {
		args, err := rd.ReadCommand()
		if err != nil {
			return out, err
		}
		cmd := make([]string, len(args))
		for i, a := range args {
			cmd[i] = string(a)
		}
		out = append(out, cmd)
	}
}

func equalCmds(a, b [][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for j := range a[i] {
			if a[i][j] != b[i][j] {
				return false
			}
		}
	}
	return true
}

func TestReaderWellFormed(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want [][]string
	}{
		{"resp", "*2\r\n$4\r\nPING\r\n$1\r\nx\r\n", [][]string{{"PING", "x"}}},
		{"resp empty bulk", "*2\r\n$4\r\nECHO\r\n$0\r\n\r\n", [][]string{{"ECHO", ""}}},
		{"resp binary", "*2\r\n$4\r\nECHO\r\n$4\r\n\r\n\x00\xff\r\n", [][]string{{"ECHO", "\r\n\x00\xff"}}},
		{"resp pipeline", "*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\n", [][]string{{"PING"}, {"PING"}}},
		{"resp empty arrays skipped", "*0\r\n*-1\r\n*1\r\n$4\r\nPING\r\n", [][]string{{"PING"}}},
		{"inline crlf", "PING hello\r\n", [][]string{{"PING", "hello"}}},
		{"inline lf", "MEM.GET coll 7\n", [][]string{{"MEM.GET", "coll", "7"}}},
		{"inline blanks", "  a \t b\t\tc  \r\n", [][]string{{"a", "b", "c"}}},
		{"inline empty lines skipped", "\r\n\n   \r\nPING\n", [][]string{{"PING"}}},
		{"inline double quotes", `SET "a b" "x\x41\n\"\\"` + "\n", [][]string{{"SET", "a b", "xA\n\"\\"}}},
		{"inline escapes", `X "\r\t\b\a\q"` + "\n", [][]string{{"X", "\r\t\b\aq"}}},
		{"inline bad hex is literal", `X "\xZZ"` + "\n", [][]string{{"X", "xZZ"}}},
		{"inline single quotes", `X 'it\'s \n'` + "\n", [][]string{{"X", `it's \n`}}},
		{"inline empty quoted", `X "" ''` + "\n", [][]string{{"X", "", ""}}},
		{"inline quote mid-token", `X a"b c"` + "\n", [][]string{{"X", "ab c"}}},
		{"mixed", "PING\r\n*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\nECHO x\n", [][]string{{"PING"}, {"ECHO", "hi"}, {"ECHO", "x"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Whole input at once and one byte per Read: the parse must
			// not depend on how input is split.
			for _, src := range []io.Reader{strings.NewReader(tt.in), iotest.OneByteReader(strings.NewReader(tt.in))} {
				got, err := readAll(t, NewReader(src, Limits{}))
				if err != io.EOF {
					t.Fatalf("err = %v, want io.EOF", err)
				}
				if !equalCmds(got, tt.want) {
					t.Fatalf("got %q, want %q", got, tt.want)
				}
			}
		})
	}
}

func TestReaderMalformed(t *testing.T) {
	lim := Limits{MaxInlineLen: 16, MaxBulkLen: 8, MaxArrayLen: 3, MaxCommandLen: 12}
	tests := []struct {
		name string
		in   string
		msg  string // ProtocolError.Msg
	}{
		{"array count not a number", "*x\r\n", "invalid multibulk length"},
		{"array count leading zero", "*01\r\n", "invalid multibulk length"},
		{"array count plus", "*+1\r\n", "invalid multibulk length"},
		{"array count overflow", "*99999999999999999999\r\n", "invalid multibulk length"},
		{"array count without CR", "*1\n$4\r\nPING\r\n", "invalid multibulk length"},
		{"array too long", "*4\r\n", "invalid multibulk length"},
		{"array header too long", "*" + strings.Repeat("1", 40) + "\r\n", "too big mbulk count string"},
		{"bulk header too long", "*1\r\n$" + strings.Repeat("1", 40) + "\r\n", "too big bulk count string"},
		{"not a bulk", "*1\r\n:1\r\n", "expected '$', got ':'"},
		{"not a bulk control byte", "*1\r\n\x01\r\n", `expected '$', got '\x01'`},
		{"bulk negative", "*1\r\n$-1\r\n", "invalid bulk length"},
		{"bulk not a number", "*1\r\n$a\r\n", "invalid bulk length"},
		{"bulk too long", "*1\r\n$9\r\n123456789\r\n", "invalid bulk length"},
		{"bulk without CRLF", "*1\r\n$2\r\nabcd\r\n", "expected CRLF after bulk string"},
		{"command too large", "*2\r\n$8\r\n12345678\r\n$8\r\n12345678\r\n", "command too large"},
		{"inline too long", strings.Repeat("a", 17) + "\r\n", "too big inline request"},
		{"inline too long unterminated", strings.Repeat("a", 100), "too big inline request"},
		{"inline too many args", "a b c d\n", "invalid multibulk length"},
		{"unbalanced double", `X "abc` + "\n", "unbalanced quotes in request"},
		{"unbalanced single", `X 'abc` + "\n", "unbalanced quotes in request"},
		{"closing quote followed by text", `X "a"b` + "\n", "unbalanced quotes in request"},
		{"trailing backslash in quotes", `X "a\` + "\n", "unbalanced quotes in request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readAll(t, NewReader(strings.NewReader(tt.in), lim))
			var pe *ProtocolError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want *ProtocolError", err)
			}
			if pe.Msg != tt.msg {
				t.Fatalf("msg = %q, want %q", pe.Msg, tt.msg)
			}
			if !strings.HasPrefix(pe.Error(), "Protocol error: ") {
				t.Fatalf("Error() = %q", pe.Error())
			}
		})
	}
}

func TestReaderLimitsExact(t *testing.T) {
	lim := Limits{MaxInlineLen: 16, MaxBulkLen: 8, MaxArrayLen: 3}
	in := strings.Repeat("a", 16) + "\r\n" + // inline exactly at the limit, CRLF
		strings.Repeat("b", 16) + "\n" + // and with LF
		"*3\r\n$8\r\n12345678\r\n$0\r\n\r\n$1\r\nx\r\n"
	got, err := readAll(t, NewReader(strings.NewReader(in), lim))
	if err != io.EOF {
		t.Fatalf("err = %v", err)
	}
	want := [][]string{{strings.Repeat("a", 16)}, {strings.Repeat("b", 16)}, {"12345678", "", "x"}}
	if !equalCmds(got, want) {
		t.Fatalf("got %q", got)
	}
}

func TestReaderTruncated(t *testing.T) {
	full := "*2\r\n$4\r\nECHO\r\n$5\r\nhello\r\n"
	for i := 1; i < len(full); i++ {
		_, err := readAll(t, NewReader(strings.NewReader(full[:i]), Limits{}))
		if err != io.ErrUnexpectedEOF {
			t.Fatalf("prefix %q: err = %v, want io.ErrUnexpectedEOF", full[:i], err)
		}
	}
	_, err := readAll(t, NewReader(strings.NewReader("PING"), Limits{}))
	if err != io.ErrUnexpectedEOF {
		t.Fatalf("unterminated inline: err = %v", err)
	}
}

func TestReaderReadError(t *testing.T) {
	boom := errors.New("boom")
	rd := NewReader(io.MultiReader(strings.NewReader("PING\r\n*1\r\n"), iotest.ErrReader(boom)), Limits{})
	got, err := readAll(t, rd)
	if err != boom || len(got) != 1 {
		t.Fatalf("got %q, err %v", got, err)
	}
}

func TestReaderLargeBulk(t *testing.T) {
	// Larger than the read buffer so the direct-read path runs, in both
	// large reads and small ones.
	payload := bytes.Repeat([]byte("0123456789abcdef"), 300_000) // 4.8 MB
	var in bytes.Buffer
	in.WriteString("*3\r\n$7\r\nMEM.ADD\r\n$1\r\nc\r\n$4800000\r\n")
	in.Write(payload)
	in.WriteString("\r\nPING\r\n")
	for _, src := range []io.Reader{bytes.NewReader(in.Bytes()), iotest.HalfReader(bytes.NewReader(in.Bytes()))} {
		rd := NewReader(src, Limits{})
		args, err := rd.ReadCommand()
		if err != nil {
			t.Fatal(err)
		}
		if len(args) != 3 || string(args[0]) != "MEM.ADD" || !bytes.Equal(args[2], payload) {
			t.Fatalf("bad parse: %d args", len(args))
		}
		args, err = rd.ReadCommand()
		if err != nil || len(args) != 1 || string(args[0]) != "PING" {
			t.Fatalf("after large bulk: %q %v", args, err)
		}
	}
}

// A tiny input declaring a huge bulk must not make the reader allocate the
// declared size.
func TestReaderNoPreallocation(t *testing.T) {
	in := "*1\r\n$67108864\r\nabc"
	var before, after runtimeMem
	before.read()
	_, err := readAll(t, NewReader(strings.NewReader(in), Limits{}))
	after.read()
	if err != io.ErrUnexpectedEOF {
		t.Fatalf("err = %v", err)
	}
	if d := after.total - before.total; d > 1<<20 {
		t.Fatalf("allocated %d bytes for a %d-byte input", d, len(in))
	}
}

func TestReaderBeforeBlock(t *testing.T) {
	// Two commands in the first read, one in the second: the hook runs
	// only when the buffered input is used up.
	r1 := strings.NewReader("PING\r\nPING\r\n")
	r2 := strings.NewReader("PING\r\n")
	rd := NewReader(io.MultiReader(r1, r2), Limits{})
	calls := 0
	rd.SetBeforeBlock(func() error { calls++; return nil })
	seen := []int{}
	for {
		_, err := rd.ReadCommand()
		if err != nil {
			break
		}
		seen = append(seen, calls)
	}
	// MultiReader returns r1's bytes in one read, then r2's.
	if len(seen) != 3 || seen[0] != 1 || seen[1] != 1 || seen[2] != 2 {
		t.Fatalf("hook calls at each command: %v", seen)
	}
	stop := errors.New("stop")
	rd = NewReader(strings.NewReader("PING\r\n"), Limits{})
	rd.SetBeforeBlock(func() error { return stop })
	if _, err := rd.ReadCommand(); err != stop {
		t.Fatalf("err = %v, want hook error", err)
	}
}

func TestParseInt(t *testing.T) {
	good := map[string]int64{"0": 0, "1": 1, "-1": -1, "9223372036854775807": 1<<63 - 1, "-9223372036854775808": -1 << 63}
	for s, want := range good {
		if got, ok := parseInt([]byte(s)); !ok || got != want {
			t.Errorf("parseInt(%q) = %d, %v", s, got, ok)
		}
	}
	for _, s := range []string{"", "-", "-0", "01", "+1", " 1", "1 ", "9223372036854775808", "-9223372036854775809", "18446744073709551616", "1a"} {
		if _, ok := parseInt([]byte(s)); ok {
			t.Errorf("parseInt(%q) accepted", s)
		}
	}
}

// Inline lines longer than the initial buffer grow it, up to the limit.
func TestReaderLongInline(t *testing.T) {
	long := strings.Repeat("y", 40<<10)
	in := "ECHO " + long + "\r\nPING\r\n"
	for _, src := range []io.Reader{strings.NewReader(in), iotest.HalfReader(strings.NewReader(in))} {
		got, err := readAll(t, NewReader(src, Limits{}))
		if err != io.EOF || !equalCmds(got, [][]string{{"ECHO", long}, {"PING"}}) {
			t.Fatalf("got %d commands, err %v", len(got), err)
		}
	}
	_, err := readAll(t, NewReader(strings.NewReader("ECHO "+strings.Repeat("y", DefaultMaxInlineLen)+"\n"), Limits{}))
	var pe *ProtocolError
	if !errors.As(err, &pe) || pe.Msg != "too big inline request" {
		t.Fatalf("err = %v", err)
	}
}
