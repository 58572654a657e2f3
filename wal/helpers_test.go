package wal

import (
	"bytes"
	"fmt"
	"testing"
)

// payload returns a deterministic record for i, of varying length so
// that frames exercise padding and cross segment boundaries.
func payload(i int) []byte {
	n := (i*37)%300 + i%8
	b := bytes.Repeat([]byte{byte(i)}, n)
	return append([]byte(fmt.Sprintf("rec-%d:", i)), b...)
}

func mustOpen(t testing.TB, opts Options) (*Log, *RecoveryReport) {
	t.Helper()
	l, rep, err := Open(opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return l, rep
}

type replayed struct {
	lsn LSN
	rec []byte
}

func replayAll(t testing.TB, l *Log, from LSN) []replayed {
	t.Helper()
	var out []replayed
	err := l.Replay(from, func(lsn LSN, rec []byte) error {
		out = append(out, replayed{lsn, append([]byte(nil), rec...)})
		return nil
	})
	if err != nil {
		t.Fatalf("Replay(%d): %v", from, err)
	}
	return out
}

func mustClose(t testing.TB, l *Log) {
	t.Helper()
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}
