package vfs

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"
)

// TestAllocResident: the memory is zeroed, writable, whole huge pages
// starting on a huge-page boundary, and, where the kernel offers
// transparent huge pages ("always" or "madvise"), eligible for them.
func TestAllocResident(t *testing.T) {
	b, free, err := AllocResident(3 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer free()
	if len(b) != 4<<20 {
		t.Fatalf("%d bytes, want 3 MB rounded up to 4 MB", len(b))
	}
	addr := uintptr(unsafe.Pointer(&b[0]))
	if addr%HugePage != 0 {
		t.Fatalf("memory at %#x, not on a 2 MB boundary", addr)
	}
	for i := range b {
		if b[i] != 0 {
			t.Fatalf("byte %d = %d", i, b[i])
		}
		b[i] = byte(i)
	}
	if _, _, err := AllocResident(-1); err == nil {
		t.Fatal("negative size accepted")
	}
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil {
		t.Logf("no transparent huge pages here (%v): only the alignment is checked", err)
		return
	}
	want := "1"
	if strings.Contains(string(mode), "[never]") {
		want = "0"
	}
	if got := smapsField(t, addr, "THPeligible"); got != want {
		t.Fatalf("THPeligible %q with THP %q, want %q", got, strings.TrimSpace(string(mode)), want)
	}
}

// TestMapResident: the copy holds the file's first length bytes and does
// not change when the file does; lengths past the end are refused.
func TestMapResident(t *testing.T) {
	for _, tc := range []struct {
		name string
		fs   FS
		dir  string
	}{{"os", Default, t.TempDir()}, {"mem", NewMemFS(), "/d"}} {
		t.Run(tc.name, func(t *testing.T) {
			tc.fs.MkdirAll(tc.dir, 0o755)
			path := filepath.Join(tc.dir, "f")
			f, err := tc.fs.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			want := bytes.Repeat([]byte("resident"), 1000)
			if _, err := f.WriteAt(want, 0); err != nil {
				t.Fatal(err)
			}
			m, err := MapResident(f, 5000)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(m.Bytes(), want[:5000]) {
				t.Fatal("copy differs from the file")
			}
			f.WriteAt([]byte("XXXX"), 0)
			if !bytes.Equal(m.Bytes(), want[:5000]) {
				t.Fatal("copy follows the file")
			}
			if err := m.Unmap(); err != nil || m.Bytes() != nil {
				t.Fatalf("unmap: %v", err)
			}
			if _, err := MapResident(f, len(want)+1); err == nil {
				t.Fatal("length past the end accepted")
			}
			if m, err := MapResident(f, 0); err != nil || len(m.Bytes()) != 0 {
				t.Fatalf("empty: %v", err)
			}
		})
	}
}

// smapsField returns field of the mapping starting at addr in
// /proc/self/smaps.
func smapsField(t *testing.T, addr uintptr, field string) string {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	head := fmt.Sprintf("%x-", addr)
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if tok, _, _ := strings.Cut(line, " "); !strings.HasSuffix(tok, ":") { // a mapping's first line
			in = strings.HasPrefix(line, head)
			continue
		}
		if in && strings.HasPrefix(line, field+":") {
			return strings.TrimSpace(strings.TrimPrefix(line, field+":"))
		}
	}
	t.Fatalf("no %s for the mapping at %#x in /proc/self/smaps", field, addr)
	return ""
}
