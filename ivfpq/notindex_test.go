package ivfpq

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/memrl/memrl/vfs"
)

// TestNotIndexFile: a file that does not start with the index magic (a
// log segment, a text file, a few bytes) is ErrNotIndexFile from Open and
// Inspect, and still ErrCorrupt for callers that rebuild a damaged index;
// its message says "not an index file", not "corrupt". An index with a bad
// header checksum, or one cut inside its magic, is ErrCorrupt only.
func TestNotIndexFile(t *testing.T) {
	const n, d = 500, 8
	dir := t.TempDir()
	ix := buildIndex(t, Params{Dim: d, NList: 4, M: 2, Bits: 4}, clustered(n, d, 4, 1), n)
	if err := ix.Save(vfs.Default, dir); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	path := filepath.Join(dir, FileName)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	badSum := slices.Clone(good)
	badSum[headerSumOff] ^= 1
	for _, tc := range []struct {
		name    string
		b       []byte
		notFile bool
	}{
		{"log segment", append([]byte("MEMRLWAL"), good[8:]...), true},
		{"text", []byte("hello, this is not an index\n"), true},
		{"three bytes", []byte("abc"), true},
		{"header checksum", badSum, false},
		{"cut inside the magic", good[:5], false},
		{"empty", nil, false},
	} {
		if err := os.WriteFile(path, tc.b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, oerr := Open(vfs.Default, dir)
		_, ierr := Inspect(vfs.Default, path)
		for what, err := range map[string]error{"Open": oerr, "Inspect": ierr} {
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s: %s: %v, want ErrCorrupt", tc.name, what, err)
			}
			if errors.Is(err, ErrNotIndexFile) != tc.notFile {
				t.Errorf("%s: %s: %v; ErrNotIndexFile %v, want %v", tc.name, what, err, !tc.notFile, tc.notFile)
			}
			if tc.notFile && (!strings.Contains(err.Error(), "not an index file") || strings.Contains(err.Error(), "corrupt")) {
				t.Errorf("%s: %s: %q, want \"not an index file\" and no \"corrupt\"", tc.name, what, err)
			}
		}
	}
}
