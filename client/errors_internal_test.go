package client

import (
	"errors"
	"strings"
	"testing"
)

func TestParseError(t *testing.T) {
	for _, tc := range []struct {
		reply  string
		code   string
		kind   error
		memory int
	}{
		{`ERR no such collection: "nope"`, "ERR", ErrNoCollection, 0},
		{`ERR no such memory: key "no such collection"`, "ERR", ErrNoMemory, 0},
		{`ERR memory key already exists: "k" (memory 7)`, "ERR", ErrKeyExists, 0},
		{`ERR memory id already exists: 7`, "ERR", ErrIDExists, 0},
		{`ERR memory 3: vector dimension does not match the collection: got 3, collection "plans" has 2`, "ERR", ErrDimension, 3},
		{`ERR memory 2: syntax error: unknown MEM.MADD option "BOGUS"`, "ERR", ErrSyntax, 2},
		{`ERR memory 3: memory id already exists: 9 (named earlier in the batch)`, "ERR", ErrIDExists, 3},
		{`ERR collection "c": data file damaged: fails its checksum: 1 damaged: memory 4 payload`, "ERR", ErrCorrupt, 0},
		{`ERR reward must be a finite number, got "NaN"`, "ERR", ErrBadNumber, 0},
		{`ERR parameter out of range: value must be a finite number`, "ERR", ErrBadParam, 0},
		{`ERR filter: unexpected ")" at column 17`, "ERR", ErrFilter, 0},
		{`ERR wal: log failed: disk on fire`, "ERR", ErrLogFailed, 0},
		{`ERR K1 must be an integer, got "ten"`, "ERR", nil, 0},
		{`ERR unknown command 'FOO', with args beginning with: 'x'`, "ERR", ErrUnknownCommand, 0},
		{`NOAUTH Authentication required.`, "NOAUTH", ErrNoAuth, 0},
		{`WRONGPASS invalid username-password pair or user is disabled.`, "WRONGPASS", ErrWrongPass, 0},
		{`NOPERM User r has no permissions to run the 'mem.add' command`, "NOPERM", ErrNoPerm, 0},
		{`OOM command not allowed when used memory > 'maxmemory'.`, "OOM", ErrOOM, 0},
		{`EXECABORT Transaction discarded because of previous errors.`, "EXECABORT", ErrExecAbort, 0},
		{`NOPROTO sorry, this protocol version is not supported.`, "NOPROTO", nil, 0},
	} {
		e := parseError(tc.reply)
		if e.Code != tc.code || e.Memory != tc.memory || e.Unwrap() != tc.kind || e.Error() != tc.reply {
			t.Errorf("parseError(%q) = code %q memory %d kind %v text %q", tc.reply, e.Code, e.Memory, e.Unwrap(), e.Error())
		}
	}
}

// TestSentinelPrefixes checks byPrefix's invariant: no sentinel's text is a
// prefix of another's, so the order of the list cannot change a match.
func TestSentinelPrefixes(t *testing.T) {
	for i, a := range byPrefix {
		for j, b := range byPrefix {
			if i != j && strings.HasPrefix(b.Error(), a.Error()) {
				t.Errorf("%q is a prefix of %q", a, b)
			}
		}
	}
	if errors.Is(convertErr(nil), ErrNoMemory) || convertErr(nil) != nil {
		t.Error("convertErr(nil) is not nil")
	}
}
