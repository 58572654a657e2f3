package engine

import (
	"path/filepath"
	"testing"

	"github.com/memrl/memrl/vfs"
)

// TestRemapTempRemovedAtOpen: a row map's temporary copy, left by a crash
// while it was written, is removed when the database opens; other files
// of the folder are not.
func TestRemapTempRemovedAtOpen(t *testing.T) {
	fs := vfs.NewMemFS()
	db, err := Open("/db", crashOpts(fs))
	if err != nil {
		t.Fatal(err)
	}
	c := mustColl(t, db, "m", NewConfig(2))
	dir := c.dir
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"remap.3.map.tmp", "notes.map.tmp"} {
		if err := vfs.WriteFileAtomic(fs, filepath.Join(dir, n), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	db, err = Open("/db", crashOpts(fs))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := fs.Stat(filepath.Join(dir, "remap.3.map.tmp")); err == nil {
		t.Fatal("the row map's temporary copy is still there")
	}
	if _, err := fs.Stat(filepath.Join(dir, "notes.map.tmp")); err != nil {
		t.Fatalf("a file that is no row map's copy was removed: %v", err)
	}
}
