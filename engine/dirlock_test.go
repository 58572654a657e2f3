package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/memrl/memrl/vfs"
)

// TestSecondOpenIsRefused: a database open once cannot be opened again
// until it is closed, on the OS (flock) and on vfs.MemFS (an in-memory
// lock), since both would append to one log.
func TestSecondOpenIsRefused(t *testing.T) {
	for name, c := range map[string]struct {
		fs  vfs.FS
		dir string
	}{"os": {vfs.Default, t.TempDir()}, "mem": {vfs.NewMemFS(), "/db"}} {
		t.Run(name, func(t *testing.T) {
			opts := Options{FS: c.fs, CheckpointInterval: -1, Logf: t.Logf}
			db, err := Open(c.dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Open(c.dir, opts)
			if !errors.Is(err, vfs.ErrLocked) || !strings.Contains(err.Error(), "in use by another process") {
				db.Close()
				t.Fatalf("second Open: %v, want the database in use", err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			db, err = Open(c.dir, opts)
			if err != nil {
				t.Fatalf("Open after Close: %v", err)
			}
			db.Close()
		})
	}
}
