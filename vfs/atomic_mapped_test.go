package vfs

import (
	"bytes"
	"path/filepath"
	"testing"
)

// TestAtomicFileWriteAt fills in a reserved header after the body, and
// refuses to write past what was written (which would leave a hole the
// caller did not mean).
func TestAtomicFileWriteAt(t *testing.T) {
	fs := NewMemFS()
	a, err := CreateAtomic(fs, "/f")
	if err != nil {
		t.Fatal(err)
	}
	a.Write([]byte("....body"))
	if _, err := a.WriteAt([]byte("HEAD"), 0); err != nil {
		t.Fatal(err)
	}
	if err := a.Commit(); err != nil {
		t.Fatal(err)
	}
	if got, _ := ReadFile(fs, "/f"); string(got) != "HEADbody" {
		t.Fatalf("got %q", got)
	}

	b, _ := CreateAtomic(fs, "/f")
	b.Write([]byte("abc"))
	if _, err := b.WriteAt([]byte("xy"), 2); err == nil {
		t.Fatal("WriteAt past the written bytes succeeded")
	}
	if err := b.Commit(); err == nil {
		t.Fatal("Commit after a failed WriteAt succeeded")
	}
	if got, _ := ReadFile(fs, "/f"); string(got) != "HEADbody" {
		t.Fatalf("a failed version replaced the file: %q", got)
	}
}

// TestCreateAtomicMappedKeepsOldVersion: replacing a mapped file must not
// shrink the old version, which a reader may still map (an OS mapping of
// truncated pages faults with SIGBUS). A plain AtomicFile does shrink it.
func TestCreateAtomicMappedKeepsOldVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "idx")
	old := bytes.Repeat([]byte("o"), 2*releaseChunk+10)
	if err := WriteFileAtomic(Default, path, old); err != nil {
		t.Fatal(err)
	}
	f, err := Default.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := Map(f, len(old))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Unmap()

	a, err := CreateAtomicMapped(Default, path)
	if err != nil {
		t.Fatal(err)
	}
	a.Write([]byte("new"))
	if err := a.Commit(); err != nil {
		t.Fatal(err)
	}
	if got, _ := ReadFile(Default, path); string(got) != "new" {
		t.Fatalf("new version %q", got)
	}
	if st, _ := f.Stat(); st.Size() != int64(len(old)) {
		t.Fatalf("the replaced version was shrunk to %d bytes", st.Size())
	}
	if !bytes.Equal(m.Bytes(), old) { // would fault if it had been shrunk
		t.Fatal("the mapping of the replaced version changed")
	}

	// The contrast: a plain replace frees the old version's space.
	g, _ := Default.Open(path)
	defer g.Close()
	if err := WriteFileAtomic(Default, path, []byte("newer")); err != nil {
		t.Fatal(err)
	}
	if st, _ := g.Stat(); st.Size() != 0 {
		t.Fatalf("plain replace left the old version at %d bytes", st.Size())
	}
}
