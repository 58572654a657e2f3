package vfs

import (
	"errors"
	"path/filepath"
	"testing"
)

// TestMapOSFileIsShared: an OS mapping shows the file's bytes, and writes
// made through the file after Map (the engine's vector file relies on it).
func TestMapOSFileIsShared(t *testing.T) {
	f, err := Default.Create(filepath.Join(t.TempDir(), "m"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write([]byte("hello world")); err != nil {
		t.Fatal(err)
	}
	m, err := Map(f, 11)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Unmap()
	if got := string(m.Bytes()); got != "hello world" {
		t.Fatalf("mapped %q", got)
	}
	if _, err := f.WriteAt([]byte("HELLO"), 0); err != nil {
		t.Fatal(err)
	}
	if got := string(m.Bytes()); got != "HELLO world" {
		t.Fatalf("after a write the mapping shows %q", got)
	}
	if err := m.Unmap(); err != nil || m.Bytes() != nil {
		t.Fatalf("Unmap: %v, bytes %v", err, m.Bytes())
	}
	if err := m.Unmap(); err != nil {
		t.Fatalf("second Unmap: %v", err)
	}
}

// TestMapMemFileIsACopy: a MemFS mapping holds the bytes as of Map, outlives
// the handle, and cannot reach past the end of the file.
func TestMapMemFileIsACopy(t *testing.T) {
	m := NewMemFS()
	f, _ := m.Create("/x")
	f.Write([]byte("hello world"))
	mp, err := Map(f, 5)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("J"), 0)
	f.Close()
	if got := string(mp.Bytes()); got != "hello" {
		t.Fatalf("mapped %q", got)
	}
	g, _ := m.Open("/x")
	defer g.Close()
	if _, err := Map(g, 12); !errors.Is(err, ErrNotMappable) {
		t.Fatalf("Map past the end: %v", err)
	}
	if _, err := Map(struct{ File }{g}, 1); !errors.Is(err, ErrNotMappable) {
		t.Fatalf("Map of a file without Mapper: %v", err)
	}
}

// TestLock: a held lock refuses a second holder until released, on both
// file systems.
func TestLock(t *testing.T) {
	for name, c := range map[string]struct {
		fs  FS
		dir string
	}{"os": {Default, t.TempDir()}, "mem": {NewMemFS(), "/"}} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(c.dir, "LOCK")
			l, err := c.fs.Lock(p)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.fs.Lock(p); !errors.Is(err, ErrLocked) {
				t.Fatalf("second Lock: %v, want ErrLocked", err)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l2, err := c.fs.Lock(p)
			if err != nil {
				t.Fatalf("Lock after release: %v", err)
			}
			l2.Close()
		})
	}
}

// TestMemLockIsNotAFileOperation: Lock creates no file and counts no
// mutating operation, and a crashed MemFS holds no locks.
func TestMemLockIsNotAFileOperation(t *testing.T) {
	m := NewMemFS()
	m.MkdirAll("/db", 0o755)
	m.PowerOffAt(0)
	if _, err := m.Lock("/db/LOCK"); err != nil {
		t.Fatal(err)
	}
	if n := m.MutatingOps(); n != 0 {
		t.Fatalf("Lock counted %d mutating operations", n)
	}
	if names, _ := m.List("/db"); len(names) != 0 {
		t.Fatalf("Lock created %v", names)
	}
	if _, err := m.Crash(DropUnsynced, nil).Lock("/db/LOCK"); err != nil {
		t.Fatalf("Lock after a crash: %v", err)
	}
}
