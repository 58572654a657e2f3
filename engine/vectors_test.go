package engine

import (
	"testing"

	"github.com/memrl/memrl/vfs"
)

// TestVectorStoreMapsOSFiles: on the OS file system the vectors are read
// through mmap, not copied into the heap; on MemFS (no descriptor) they are
// kept in the heap. Both read back what was written, across growth and
// reopening.
func TestVectorStoreMapsOSFiles(t *testing.T) {
	for _, tc := range []struct {
		name string
		fs   vfs.FS
		dir  string
		mmap bool
	}{
		{"os", vfs.Default, t.TempDir(), true},
		{"mem", vfs.NewMemFS(), "/db", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.fs.MkdirAll(tc.dir, 0o755)
			s, err := openVectorStore(newFileCache(tc.fs, 4), tc.dir, 3, 0, true)
			if err != nil {
				t.Fatal(err)
			}
			const n = 5000 // crosses several doublings
			for r := uint32(0); r < n; r++ {
				if err := s.put(r, []float32{float32(r), 1, -float32(r)}); err != nil {
					t.Fatal(err)
				}
			}
			if (s.mm != nil) != tc.mmap || (s.heap != nil) == tc.mmap {
				t.Fatalf("mmap %v, heap %v; want mmap %v", s.mm != nil, s.heap != nil, tc.mmap)
			}
			check := func(s *vectorStore) {
				for r := uint32(0); r < n; r++ {
					if v := s.row(r); v[0] != float32(r) || v[1] != 1 || v[2] != -float32(r) {
						t.Fatalf("row %d = %v", r, v)
					}
					if err := s.checkRow(r); err != nil {
						t.Fatal(err)
					}
				}
			}
			check(s)
			if err := s.syncTo(n); err != nil {
				t.Fatal(err)
			}
			s.close()
			s, err = openVectorStore(newFileCache(tc.fs, 4), tc.dir, 3, n, false)
			if err != nil {
				t.Fatal(err)
			}
			defer s.close()
			check(s)
		})
	}
}
