package vfs

import (
	"bytes"
	"path/filepath"
	"testing"
)

// TestOSFileWriteBack runs sync_file_range on a real file: OS files must
// implement WriteBacker on Linux, and SyncPaced must leave the bytes intact.
func TestOSFileWriteBack(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	f, err := Default.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, ok := f.(WriteBacker); !ok {
		t.Fatal("OS file is not a WriteBacker")
	}
	data := bytes.Repeat([]byte("memrl"), writeBackChunk/2) // 2.5 chunks
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := SyncPaced(f, 0, int64(len(data))); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(Default, p)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("contents differ after SyncPaced (%v)", err)
	}
}
