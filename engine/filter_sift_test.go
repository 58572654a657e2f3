package engine

import (
	"encoding/binary"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/memrl/memrl/wal"
)

// siftDir holds the slice of the sift1m-deb set these tests read (the
// first 20,000 base vectors and 100 queries), committed so that the tests
// pass in a clone with nothing beside it; scripts/make_sift_slice.sh makes
// it from the full set.
const siftDir = "testdata/sift20k"

// readBvecsPrefix reads the first n vectors of a TEXMEX .bvecs file as
// float32 rows of dim.
func readBvecsPrefix(t *testing.T, path string, n, dim int) [][]float32 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("the SIFT slice (scripts/make_sift_slice.sh): %v", err)
	}
	defer f.Close()
	rec := make([]byte, 4+dim)
	out := make([][]float32, n)
	for i := range out {
		if _, err := io.ReadFull(f, rec); err != nil {
			t.Fatal(err)
		}
		if int(binary.LittleEndian.Uint32(rec)) != dim {
			t.Fatalf("%s: vector %d is not %d-dimensional", path, i, dim)
		}
		v := make([]float32, dim)
		for j, b := range rec[4:] {
			v[j] = float32(b)
		}
		out[i] = v
	}
	return out
}

// TestFilteredRecallOnSIFT: on the first 20,000 real SIFT vectors at every
// index default, held-out queries filtered to random allowed sets from 1%
// to 50% of the memories (and, at 5%, a residual Match keeping a fifth of
// them) find the exact filtered top 10 with recall >= 0.95, through the
// index path forced and through the automatic choice.
func TestFilteredRecallOnSIFT(t *testing.T) {
	const n, dim, nq, k = 20000, 128, 60, 10
	rows := readBvecsPrefix(t, filepath.Join(siftDir, "base.bvecs"), n, dim)
	queries := readBvecsPrefix(t, filepath.Join(siftDir, "query.bvecs"), nq, dim)
	db, _ := openTemp(t, Options{Sync: wal.SyncNone})
	c := mustColl(t, db, "sift", Config{Dim: dim, Metric: L2, Index: IndexConfig{TrainThreshold: n}})
	f := &filterFixture{c: c, dim: dim, rows: rows, live: map[uint32]uint64{}}
	for r, v := range rows {
		id, err := c.Add(AddRequest{Vector: v})
		if err != nil {
			t.Fatal(err)
		}
		f.live[uint32(r)] = id
	}
	info := waitIndexed(t, c)
	rng := rand.New(rand.NewSource(12))
	for _, tc := range []struct {
		share float64
		match bool
	}{{0.01, false}, {0.05, false}, {0.05, true}, {0.2, false}, {0.5, false}} {
		allow := roaring.New()
		for r := range n {
			if rng.Float64() < tc.share {
				allow.Add(uint32(r))
			}
		}
		var match func(uint32) bool
		if tc.match {
			match = func(row uint32) bool { return row%5 == 2 }
		}
		for _, path := range []SearchPath{PathIndex, PathAuto} {
			hit, total := 0, 0
			for _, q := range queries {
				want, _ := f.truth(q, k, allow, match, 0, false)
				for _, row := range f.phase1Rows(t, q, SearchOptions{K1: k, Allow: allow, Match: match, Path: path}) {
					for _, w := range want {
						if w == row {
							hit++
						}
					}
				}
				total += len(want)
			}
			recall := float64(hit) / float64(total)
			name := fmt.Sprintf("%s share=%g match=%v path=%d", info.Index, tc.share, tc.match, path)
			t.Logf("%s: filtered recall@10 %.3f", name, recall)
			if recall < 0.95 {
				t.Errorf("%s: filtered recall@10 %.3f, want >= 0.95", name, recall)
			}
		}
	}
}
