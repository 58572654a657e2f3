package fuzz

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"strconv"
	"testing"
	"testing/iotest"

	"github.com/memrl/memrl/server"
)

// seeds are added in code as well as kept in testdata, so the target has a
// useful starting point even if the corpus directory is trimmed.
var seeds = []string{
	"*2\r\n$4\r\nPING\r\n$1\r\nx\r\n",
	"PING hello\r\n",
	"MEM.GET coll 7\n",
	"SET \"a\\x41\\n\" 'it\\'s'\r\n",
	"*1\r\n$67108864\r\nabc",
	"*1048576\r\n",
	"*2\r\n$4\r\nECHO\r\n",
	"\"unbalanced\r\n",
}

// Limit sets the target parses with: the defaults (to exercise the
// no-preallocation rule against 64 MiB bulks) and tight ones (to reach the
// limit checks with short inputs).
var limitSets = []server.Limits{
	{},
	{MaxInlineLen: 64, MaxBulkLen: 64, MaxArrayLen: 8, MaxCommandLen: 256},
}

func FuzzReadCommand(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		for i, lim := range limitSets {
			// Allocation is measured with the default limits only, where
			// declared sizes are largest; ReadMemStats stops the world
			// and dominates the cost of an execution.
			checkInput(t, in, lim, i == 0)
		}
	})
}

// effective returns lim with defaults applied, mirroring server.Limits.
func effective(lim server.Limits) server.Limits {
	if lim.MaxInlineLen == 0 {
		lim.MaxInlineLen = server.DefaultMaxInlineLen
	}
	if lim.MaxBulkLen == 0 {
		lim.MaxBulkLen = server.DefaultMaxBulkLen
	}
	if lim.MaxArrayLen == 0 {
		lim.MaxArrayLen = server.DefaultMaxArrayLen
	}
	if lim.MaxCommandLen == 0 {
		lim.MaxCommandLen = server.DefaultMaxCommandLen
	}
	return lim
}

func totalAlloc() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

func checkInput(t *testing.T, in []byte, lim server.Limits, measure bool) {
	eff := effective(lim)
	var before uint64
	if measure {
		before = totalAlloc()
	}
	rd := server.NewReader(bytes.NewReader(in), lim)
	var cmds [][][]byte
	var err error
	// Each command consumes at least one byte, so len(in)+1 calls end it.
	for range len(in) + 1 {
		var args [][]byte
		args, err = rd.ReadCommand()
		if err != nil {
			break
		}
		if len(args) == 0 || len(args) > eff.MaxArrayLen {
			t.Fatalf("command with %d args", len(args))
		}
		total := 0
		cp := make([][]byte, len(args))
		for i, a := range args {
			if len(a) > eff.MaxBulkLen {
				t.Fatalf("arg of %d bytes exceeds MaxBulkLen %d", len(a), eff.MaxBulkLen)
			}
			total += len(a)
			cp[i] = bytes.Clone(a) // args are only valid until the next call
		}
		if total > eff.MaxCommandLen {
			t.Fatalf("command of %d bytes exceeds MaxCommandLen", total)
		}
		cmds = append(cmds, cp)
	}
	var pe *server.ProtocolError
	if err == nil {
		t.Fatalf("no error after %d reads of a %d-byte input", len(in)+1, len(in))
	}
	if err != io.EOF && err != io.ErrUnexpectedEOF && !errors.As(err, &pe) {
		t.Fatalf("unexpected error type %T: %v", err, err)
	}
	// Parsing allocates the reader's 16 KiB buffer, at most one 64 KiB
	// read-ahead for a long bulk string, growth of the line buffer for
	// long lines, and storage proportional to the input. The bound is
	// loose but far below a preallocated 64 MiB bulk.
	if measure {
		if used := totalAlloc() - before; used > 4<<20+64*uint64(len(in)) {
			t.Fatalf("parsing a %d-byte input allocated %d bytes", len(in), used)
		}
	}

	// Split reads: the same bytes delivered one at a time parse to the
	// same commands and end with the same error. The parser is a function
	// of the bytes, not of how the network split them.
	rd1 := server.NewReader(iotest.OneByteReader(bytes.NewReader(in)), lim)
	for i := 0; ; i++ {
		args, err1 := rd1.ReadCommand()
		if err1 != nil {
			if i != len(cmds) || err1.Error() != err.Error() {
				t.Fatalf("one byte per read: %v after %d commands, want %v after %d", err1, i, err, len(cmds))
			}
			break
		}
		if i >= len(cmds) || !sameArgs(args, cmds[i]) {
			t.Fatalf("one byte per read: command %d = %q", i, args)
		}
	}

	// Round trip: the RESP encoding of what was parsed parses back to the
	// same arguments.
	var enc bytes.Buffer
	for _, cmd := range cmds {
		enc.WriteString("*" + strconv.Itoa(len(cmd)) + "\r\n")
		for _, a := range cmd {
			enc.WriteString("$" + strconv.Itoa(len(a)) + "\r\n")
			enc.Write(a)
			enc.WriteString("\r\n")
		}
	}
	rd = server.NewReader(bytes.NewReader(enc.Bytes()), lim)
	for i, want := range cmds {
		got, err := rd.ReadCommand()
		if err != nil {
			t.Fatalf("re-encoded command %d: %v", i, err)
		}
		if len(got) != len(want) {
			t.Fatalf("re-encoded command %d: %d args, want %d", i, len(got), len(want))
		}
		for j := range want {
			if !bytes.Equal(got[j], want[j]) {
				t.Fatalf("re-encoded command %d arg %d: %q, want %q", i, j, got[j], want[j])
			}
		}
	}
	if _, err := rd.ReadCommand(); err != io.EOF {
		t.Fatalf("after re-encoded commands: %v, want io.EOF", err)
	}
}

func sameArgs(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}
