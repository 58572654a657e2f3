package vfs

import (
	"errors"
	"io/fs"
	"path/filepath"
	"testing"
)

func TestOSFS(t *testing.T) {
	var o FS = OSFS{}
	dir := filepath.Join(t.TempDir(), "a", "b")
	if err := o.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "x")
	f, err := o.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if !MapShared(f) {
		t.Fatal("OS file mappings must show later writes")
	}
	f.Close()
	if err := o.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	f, _ = o.OpenReadWrite(p) // no truncate
	if st, _ := f.Stat(); st.Size() != 5 {
		t.Fatalf("OpenReadWrite truncated: %d", st.Size())
	}
	f.Close()
	if err := o.Rename(p, p+"2"); err != nil {
		t.Fatal(err)
	}
	if names, _ := o.List(dir); len(names) != 1 || names[0] != "x2" {
		t.Fatalf("List %v", names)
	}
	if err := o.Remove(p + "2"); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Stat(p + "2"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Stat removed: %v", err)
	}
	if err := o.RemoveAll(filepath.Dir(dir)); err != nil {
		t.Fatal(err)
	}
}
