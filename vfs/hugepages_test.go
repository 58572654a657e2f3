package vfs

import (
	"bytes"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestHugePageHintsKeepBytes: a synced file whose cached pages were
// dropped (DropCachedPages) and then mapped with AdviseHugePages reads back
// exactly as written, on the OS file system and on MemFS, where both hints
// do nothing; the hints are safe on a nil mapping and a missing file. Where
// the kernel honoured them the test logs the huge pages it mapped: that is
// up to the kernel and file system, so it is reported, not asserted.
func TestHugePageHintsKeepBytes(t *testing.T) {
	want := make([]byte, 6<<20+123) // three huge pages and a ragged end
	rand.New(rand.NewSource(1)).Read(want)
	for _, c := range []struct {
		name string
		fs   FS
		dir  string
	}{{"os", Default, t.TempDir()}, {"mem", NewMemFS(), "/"}} {
		t.Run(c.name, func(t *testing.T) {
			name := filepath.Join(c.dir, "f")
			f, err := c.fs.Create(name)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.Write(want); err != nil {
				t.Fatal(err)
			}
			if err := f.Sync(); err != nil {
				t.Fatal(err)
			}
			f.Close()
			DropCachedPages(c.fs, name)
			DropCachedPages(c.fs, filepath.Join(c.dir, "missing"))

			g, err := c.fs.Open(name)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			m, err := Map(g, len(want))
			if err != nil {
				t.Fatal(err)
			}
			defer m.Unmap()
			m.AdviseHugePages()
			if !bytes.Equal(m.Bytes(), want) {
				t.Fatal("the advised mapping does not read back the file's bytes")
			}
			if kb := pmdMappedKB(t, name); kb > 0 {
				t.Logf("%d kB of the mapping are huge pages", kb)
			}
		})
	}
	var nilMapping *Mapping
	nilMapping.AdviseHugePages()
	(&Mapping{}).AdviseHugePages()
}

// pmdMappedKB returns the FilePmdMapped kilobytes /proc/self/smaps gives
// the mapping of path, 0 where there is no such file.
func pmdMappedKB(t *testing.T, path string) int {
	sm, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0
	}
	in := false
	for _, line := range strings.Split(string(sm), "\n") {
		fields := strings.Fields(line)
		switch {
		case len(fields) >= 6 && strings.Contains(fields[0], "-"):
			in = fields[5] == path
		case in && len(fields) >= 2 && fields[0] == "FilePmdMapped:":
			kb, _ := strconv.Atoi(fields[1])
			return kb
		}
	}
	return 0
}
