package ivfpq

import (
	"testing"

	"github.com/memrl/memrl/vfs"
)

// BenchmarkVerify measures checking every list of an opened index file
// (Verify), which the engine does at open so that a damaged list is said
// at start (engine/index_damage.go): bytes per second of lists hashed, to
// scale to other sizes (at 1M vectors of DIM 128, IVF2048,PQ64x4, a file
// of about 38 MB: 4 bytes of row, 32 of codes and 2 of term a vector).
func BenchmarkVerify(b *testing.B) {
	const n, d = 50000, 64
	p := Params{Dim: d, NList: 256, M: 32, Bits: 4, Metric: L2}
	ix := buildIndex(b, p, clustered(n, d, 500, 3), 20000)
	dir := b.TempDir()
	if err := ix.Save(vfs.Default, dir); err != nil {
		b.Fatal(err)
	}
	ix.Close()
	ix, err := OpenResident(vfs.Default, dir)
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	var bytes int64
	for _, seg := range ix.baseBytes {
		bytes += int64(len(seg))
	}
	b.SetBytes(bytes)
	for b.Loop() {
		for l := range ix.baseState {
			if len(ix.baseBytes[l]) > 0 {
				ix.baseState[l].Store(listUnchecked)
			}
		}
		if err := ix.Verify(); err != nil {
			b.Fatal(err)
		}
	}
}
