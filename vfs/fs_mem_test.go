package vfs

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"math/rand"
	"testing"
)

func mustWrite(t *testing.T, f File, b []byte) {
	t.Helper()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}

func readAll(t *testing.T, m FS, name string) ([]byte, bool) {
	t.Helper()
	b, err := ReadFile(m, name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return b, true
}

func TestMemFSBasics(t *testing.T) {
	m := NewMemFS()
	if err := m.MkdirAll("/a/b", 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := m.Create("/a/b/x")
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, f, []byte("hello world"))
	if _, err := f.WriteAt([]byte("HELLO"), 0); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := f.ReadAt(buf, 6); err != nil || string(buf) != "world" {
		t.Fatalf("ReadAt: %q %v", buf, err)
	}
	if n, err := f.ReadAt(make([]byte, 20), 6); n != 5 || err != io.EOF {
		t.Fatalf("short ReadAt: %d %v", n, err)
	}
	if st, _ := f.Stat(); st.Size() != 11 {
		t.Fatalf("size %d", st.Size())
	}
	if MapShared(f) {
		t.Fatal("MemFS mappings are copies, not shared")
	}
	if err := f.Truncate(5); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := f.Close(); err == nil {
		t.Fatal("double Close succeeded")
	}
	if b, _ := readAll(t, m, "/a/b/x"); string(b) != "HELLO" {
		t.Fatalf("contents %q", b)
	}
	m.Create("/a/b/c")
	m.MkdirAll("/a/b/d", 0o755)
	if names, _ := m.List("/a/b"); len(names) != 3 || names[0] != "c" || names[1] != "d" || names[2] != "x" {
		t.Fatalf("List %v", names)
	}
	ro, _ := m.Open("/a/b/x")
	if _, err := ro.Write([]byte("no")); err == nil {
		t.Fatal("write to read-only file succeeded")
	}
	// An open handle survives removal of its name.
	if err := m.Remove("/a/b/x"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Open("/a/b/x"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("open removed file: %v", err)
	}
	if b, _ := io.ReadAll(ro); string(b) != "HELLO" {
		t.Fatalf("read from unlinked handle %q", b)
	}
	if _, err := m.Create("/nodir/x"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("create in missing dir: %v", err)
	}
	if err := m.Remove("/a/b"); err == nil {
		t.Fatal("removed a non-empty directory")
	}
	if err := m.RemoveAll("/a"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.List("/a"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("List after RemoveAll: %v", err)
	}
	if err := m.RemoveAll("/missing"); err != nil {
		t.Fatalf("RemoveAll of missing: %v", err)
	}
}

func TestMemFSDropUnsynced(t *testing.T) {
	m := NewMemFS()
	m.MkdirAll("/d", 0o755)
	f, _ := m.Create("/d/f")
	mustWrite(t, f, []byte("synced"))
	f.Sync()
	// File synced but name not: gone after a crash.
	if _, ok := readAll(t, m.Crash(DropUnsynced, nil), "/d/f"); ok {
		t.Fatal("file whose directory was never synced survived")
	}
	m.SyncDir("/d")
	mustWrite(t, f, []byte("+unsynced"))
	c := m.Crash(DropUnsynced, nil)
	if b, _ := readAll(t, c, "/d/f"); string(b) != "synced" {
		t.Fatalf("after crash %q", b)
	}
	// Unsynced rename and remove are undone.
	m.Rename("/d/f", "/d/g")
	c = m.Crash(DropUnsynced, nil)
	if _, ok := readAll(t, c, "/d/f"); !ok {
		t.Fatal("unsynced rename persisted")
	}
	m.SyncDir("/d")
	c = m.Crash(DropUnsynced, nil)
	if _, ok := readAll(t, c, "/d/g"); !ok {
		t.Fatal("synced rename lost")
	}
	if _, ok := readAll(t, c, "/d/f"); ok {
		t.Fatal("old name survived a synced rename")
	}
	m.Remove("/d/g")
	if _, ok := readAll(t, m.Crash(DropUnsynced, nil), "/d/g"); !ok {
		t.Fatal("unsynced remove persisted")
	}
	// A crashed FS is fully durable and independent.
	c2 := c.Crash(DropUnsynced, nil)
	if b, _ := readAll(t, c2, "/d/g"); string(b) != "synced" {
		t.Fatalf("crash of a crash: %q", b)
	}
}

func TestMemFSRandomPrefixAndTear(t *testing.T) {
	synced := bytes.Repeat([]byte("S"), 1000)
	var writes [][]byte
	var full []byte
	full = append(full, synced...)
	for i := 0; i < 6; i++ {
		w := bytes.Repeat([]byte{byte('a' + i)}, 300)
		writes = append(writes, w)
		full = append(full, w...)
	}
	sawShorter, sawFull, sawTorn := false, false, false
	for seed := int64(0); seed < 300; seed++ {
		m := NewMemFS()
		m.MkdirAll("/d", 0o755)
		f, _ := m.Create("/d/f")
		mustWrite(t, f, synced)
		f.Sync()
		m.SyncDir("/d")
		for _, w := range writes {
			mustWrite(t, f, w)
			f.Write(nil)
		}
		rng := rand.New(rand.NewSource(seed))
		b, _ := readAll(t, m.Crash(KeepRandomPrefix, rng), "/d/f")
		if len(b) < len(synced) || !bytes.Equal(b, full[:len(b)]) {
			t.Fatalf("seed %d: KeepRandomPrefix kept a non-prefix (%d bytes)", seed, len(b))
		}
		sawShorter = sawShorter || len(b) < len(full)
		sawFull = sawFull || len(b) == len(full)

		b, _ = readAll(t, m.Crash(TearLastSector, rng), "/d/f")
		if len(b) < len(synced) || !bytes.Equal(b[:len(synced)], synced) {
			t.Fatalf("seed %d: TearLastSector damaged synced bytes", seed)
		}
		if !bytes.Equal(b, full[:len(b)]) {
			sawTorn = true
			// Damage is confined to the last sector of what survived.
			lastSector := (len(b) - 1) / SectorSize * SectorSize
			if !bytes.Equal(b[:lastSector], full[:lastSector]) {
				t.Fatalf("seed %d: tear outside the last sector", seed)
			}
		}
	}
	if !sawShorter || !sawFull || !sawTorn {
		t.Fatalf("crash modes not exercised: shorter %v full %v torn %v", sawShorter, sawFull, sawTorn)
	}
}

func TestMemFSRandomPrefixOfNames(t *testing.T) {
	seen := map[string]bool{}
	for seed := int64(0); seed < 100; seed++ {
		m := NewMemFS()
		m.MkdirAll("/d", 0o755)
		for _, n := range []string{"/d/1", "/d/2", "/d/3"} {
			f, _ := m.Create(n)
			f.Sync()
		}
		c := m.Crash(KeepRandomPrefix, rand.New(rand.NewSource(seed)))
		names, _ := c.List("/d")
		key := ""
		for _, n := range names {
			key += n
		}
		// Creates persist in order: only prefixes are possible.
		switch key {
		case "", "1", "12", "123":
			seen[key] = true
		default:
			t.Fatalf("seed %d: names %v are not a prefix of the creates", seed, names)
		}
	}
	if len(seen) != 4 {
		t.Fatalf("not every prefix seen: %v", seen)
	}
}

func TestMemFSFaultInjection(t *testing.T) {
	m := NewMemFS()
	m.MkdirAll("/d", 0o755)
	a, _ := m.Create("/d/a.wal")
	b, _ := m.Create("/d/b.dat")
	mustWrite(t, a, []byte("A"))
	mustWrite(t, b, []byte("B"))
	m.FailNextSync(".wal")
	if err := b.Sync(); err != nil {
		t.Fatalf("non-matching file failed: %v", err)
	}
	if err := a.Sync(); !errors.Is(err, ErrInjected) {
		t.Fatalf("injected sync fault: %v", err)
	}
	m.SyncDir("/d")
	if got, _ := readAll(t, m.Crash(DropUnsynced, nil), "/d/a.wal"); len(got) != 0 {
		t.Fatalf("data of a failed sync became durable: %q", got)
	}
	if err := a.Sync(); err != nil {
		t.Fatalf("fault is one-shot: %v", err)
	}
	m.FailNextWrite("")
	if _, err := a.Write([]byte("x")); !errors.Is(err, ErrInjected) {
		t.Fatalf("injected write fault: %v", err)
	}
	if st, _ := a.Stat(); st.Size() != 1 {
		t.Fatal("failed write changed the file")
	}
	m.FailNextSyncDir("/d")
	m.Create("/d/c")
	if err := m.SyncDir("/d"); !errors.Is(err, ErrInjected) {
		t.Fatalf("injected SyncDir fault: %v", err)
	}
	if _, ok := readAll(t, m.Crash(DropUnsynced, nil), "/d/c"); ok {
		t.Fatal("failed SyncDir made a create durable")
	}
}
