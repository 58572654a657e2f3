package engine

import (
	"testing"

	"github.com/memrl/memrl/vfs"
)

// TestAttrMemory: the accessor counts the live memories with attributes and
// their bytes, and the index's size appears with an indexed field, goes
// with its drop, and follows deletes.
func TestAttrMemory(t *testing.T) {
	fs := vfs.NewMemFS()
	db, c := openAttrsDB(t, fs, Options{})
	defer db.Close()
	for i, a := range []string{`{"tenant":"t1","kind":"k0"}`, `{"tenant":"t2"}`, ""} {
		if _, err := c.Add(AddRequest{Vector: []float32{float32(i), 0, 0, 0}, Attrs: []byte(a)}); err != nil {
			t.Fatal(err)
		}
	}
	want := uint64(len(`{"tenant":"t1","kind":"k0"}`) + len(`{"tenant":"t2"}`))
	am, err := c.AttrMemory()
	if err != nil || am.Memories != 2 || am.AttrBytes != want || am.IndexBytes != 0 {
		t.Fatalf("no index: %+v, %v; want 2 memories, %d bytes, no index", am, err, want)
	}
	if err := c.IndexField("tenant", true); err != nil {
		t.Fatal(err)
	}
	if am, err = c.AttrMemory(); err != nil || am.IndexBytes == 0 {
		t.Fatalf("indexed: %+v, %v; want index bytes", am, err)
	}
	if _, err := c.Delete([]uint64{1}); err != nil {
		t.Fatal(err)
	}
	want = uint64(len(`{"tenant":"t2"}`))
	if am, err = c.AttrMemory(); err != nil || am.Memories != 1 || am.AttrBytes != want {
		t.Fatalf("after delete: %+v, %v; want 1 memory, %d bytes", am, err, want)
	}
	if err := c.IndexField("tenant", false); err != nil {
		t.Fatal(err)
	}
	if am, err = c.AttrMemory(); err != nil || am.IndexBytes != 0 {
		t.Fatalf("dropped: %+v, %v; want no index bytes", am, err)
	}
}
