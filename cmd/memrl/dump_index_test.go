package main

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memrl/memrl/ivfpq"
	"github.com/memrl/memrl/vfs"
)

// TestDumpIndexNotAnIndexFile: memrl dump index on a file that is not an
// index says "not an index file" (not "corrupt", and no header fields
// decoded from the wrong bytes); on an index whose header fails its
// checksum it says "corrupt".
func TestDumpIndexNotAnIndexFile(t *testing.T) {
	dir := t.TempDir()
	const n, d = 400, 8
	rng := rand.New(rand.NewPCG(1, 2))
	vecs := make([]float32, n*d)
	for i := range vecs {
		vecs[i] = rng.Float32()
	}
	ix, err := ivfpq.Train(ivfpq.Params{Dim: d, NList: 4, M: 2, Bits: 4}, vecs, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.AddBatch(0, vecs, 1); err != nil {
		t.Fatal(err)
	}
	if err := ix.Save(vfs.Default, dir); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	idx := filepath.Join(dir, ivfpq.FileName)
	var out strings.Builder
	if err := dumpTo(&out, "index", idx, false); err != nil || !strings.Contains(out.String(), "nlist 4") {
		t.Fatalf("dump of a good index: %v\n%s", err, out.String())
	}

	other := filepath.Join(dir, "notes.txt")
	os.WriteFile(other, []byte(strings.Repeat("not an index, just some text\n", 20)), 0o644)
	out.Reset()
	err = dumpTo(&out, "index", other, false)
	if err == nil || !strings.Contains(err.Error(), "not an index file") || strings.Contains(err.Error(), "corrupt") {
		t.Errorf("dump index of a text file: %v, want \"not an index file\" and no \"corrupt\"", err)
	}
	if strings.Contains(out.String(), "version") {
		t.Errorf("dump index of a text file printed header fields:\n%s", out.String())
	}

	b, _ := os.ReadFile(idx)
	b[20] ^= 1 // a header field: the header checksum fails
	os.WriteFile(idx, b, 0o644)
	out.Reset()
	if err := dumpTo(&out, "index", idx, false); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("dump index with a bad header checksum: %v, want \"corrupt\"", err)
	}
}
