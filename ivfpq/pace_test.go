package ivfpq

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/memrl/memrl/vfs"
)

// savedFiles saves ix to a fresh folder and returns its files' bytes.
func savedFiles(t *testing.T, ix *Index) map[string][]byte {
	t.Helper()
	dir := t.TempDir()
	if err := ix.Save(vfs.Default, dir); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = b
	}
	return out
}

// TestPacedBuildIsTheSameBuild: a paced build on one worker calls pace
// between small blocks of its work (so that a caller on one processor can
// leave it to requests often) and makes exactly the index an unpaced one
// makes; with more workers pace is never called.
func TestPacedBuildIsTheSameBuild(t *testing.T) {
	const n, d = 3000, 16
	base := clustered(n, d, 20, 4)
	p := Params{Dim: d, NList: 32, M: 4, Bits: 8, Metric: L2}
	build := func(workers int, pace func()) *Index {
		ix, err := TrainPaced(p, base, workers, 7, pace)
		if err != nil {
			t.Fatal(err)
		}
		if err := ix.AddBatchPaced(0, base, workers, pace); err != nil {
			t.Fatal(err)
		}
		return ix
	}
	plain := build(1, nil)
	defer plain.Close()
	paces := 0
	paced := build(1, func() { paces++ })
	defer paced.Close()
	// k-means iterations over 3,000 points, PQ training per sub-space and
	// 3,000 encodings, in blocks of paceBlock: hundreds of calls at least.
	if paces < 3*n/paceBlock {
		t.Fatalf("pace called %d times, want at least %d", paces, 3*n/paceBlock)
	}
	want, got := savedFiles(t, plain), savedFiles(t, paced)
	if len(want) == 0 || len(got) != len(want) {
		t.Fatalf("saved %d files paced, %d unpaced", len(got), len(want))
	}
	for name, b := range want {
		if !bytes.Equal(got[name], b) {
			t.Fatalf("%s differs between the paced and the unpaced build", name)
		}
	}
	two := 0
	build(2, func() { two++ }).Close()
	if two != 0 {
		t.Fatalf("pace called %d times with 2 workers, want 0", two)
	}
}
