package engine

import (
	"testing"

	"github.com/memrl/memrl/vfs"
)

// TestVectorStoreModes: on the OS file system the vectors are kept
// resident by default and read through mmap when mapped is asked; on MemFS
// (no descriptor) they are always resident. Every mode reads back what was
// written, by single puts and batches, across the file's doublings and the
// resident copy's moves to larger reservations, and after reopening.
func TestVectorStoreModes(t *testing.T) {
	const dim = 1024 // 4 KB rows: 512 fill a huge page
	for _, tc := range []struct {
		name   string
		fs     vfs.FS
		dir    string
		mapped bool // asked for
		mmap   bool // got
	}{
		{"os-resident", vfs.Default, t.TempDir(), false, false},
		{"os-mapped", vfs.Default, t.TempDir(), true, true},
		{"mem", vfs.NewMemFS(), "/db", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.fs.MkdirAll(tc.dir, 0o755)
			s, err := openVectorStore(newFileCache(tc.fs, 4), tc.dir, dim, 0, true, tc.mapped)
			if err != nil {
				t.Fatal(err)
			}
			const n = 5000 // crosses several doublings and two moves
			vec := func(r uint32) []float32 {
				v := make([]float32, dim)
				v[0], v[1], v[dim-1] = float32(r), 1, -float32(r)
				return v
			}
			moves := 0
			for r := uint32(0); r < n; {
				before := s.memRows
				if r%7 == 3 { // a batch now and then
					batch := [][]float32{vec(r), vec(r + 1), vec(r + 2)}
					if err := s.putRows(r, batch); err != nil {
						t.Fatal(err)
					}
					r += 3
				} else {
					if err := s.put(r, vec(r)); err != nil {
						t.Fatal(err)
					}
					r++
				}
				if s.memRows != before && before != 0 {
					moves++
				}
			}
			if (s.mm != nil) != tc.mmap || s.resident == tc.mmap || (s.mem.b != nil) == tc.mmap {
				t.Fatalf("mmap %v, resident %v; want mmap %v", s.mm != nil, s.resident, tc.mmap)
			}
			// Twice ahead in the heap below a huge page (511 rows of 4 KB),
			// four times ahead in huge pages from there.
			if !tc.mmap && moves != 10 {
				t.Fatalf("resident rows moved %d times, want 10 (2 → 6 → 14 → 30 → 62 → 126 → 254 → 510 → 511 → 2,048 → 8,196 rows reserved)", moves)
			}
			check := func(s *vectorStore) {
				for r := uint32(0); r < n; r++ {
					if v := s.row(r); v[0] != float32(r) || v[1] != 1 || v[dim-1] != -float32(r) || v[2] != 0 {
						t.Fatalf("row %d = %v…", r, v[:3])
					}
					if err := s.checkRow(r); err != nil {
						t.Fatal(err)
					}
				}
				if got, want := s.heldBytes(), int64(n)*s.rowSize; tc.mmap && got < want || !tc.mmap && got != want {
					t.Fatalf("heldBytes %d for %d rows of %d", got, n, s.rowSize)
				}
			}
			check(s)
			if err := s.syncTo(n); err != nil {
				t.Fatal(err)
			}
			s.close()
			s, err = openVectorStore(newFileCache(tc.fs, 4), tc.dir, dim, n, false, tc.mapped)
			if err != nil {
				t.Fatal(err)
			}
			defer s.close()
			check(s)
		})
	}
}
