package engine

import (
	"errors"
	"math/rand"
	"path/filepath"
	"testing"

	"github.com/memrl/memrl/vfs"
	"github.com/memrl/memrl/wal"
)

// TestOpenRefusesInvalidConfigInCheckpoint: a checkpoint whose checksum
// verifies but whose collection config could never have been created
// (dimension 0 divided the vector file size by a zero row size and
// panicked Open) is refused as corrupt.
func TestOpenRefusesInvalidConfigInCheckpoint(t *testing.T) {
	for name, mutate := range map[string]func(*Config){
		"dim 0":         func(c *Config) { c.Dim = 0 },
		"dim too large": func(c *Config) { c.Dim = MaxDim + 1 },
		"metric":        func(c *Config) { c.Metric = 9 },
		"alpha 2":       func(c *Config) { c.Alpha = 2 },
	} {
		cp := randomCheckpoint(rand.New(rand.NewSource(5)), 0)
		mutate(&cp.colls[0].cfg)
		if _, err := decodeCheckpoint(encodeCheckpoint(cp)); !errors.Is(err, ErrCorruptCheckpoint) {
			t.Errorf("%s: decode: %v, want ErrCorruptCheckpoint", name, err)
		}
		fs := vfs.NewMemFS()
		if err := fs.MkdirAll("/db", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := vfs.WriteFileAtomic(fs, filepath.Join("/db", ckptName), encodeCheckpoint(cp)); err != nil {
			t.Fatal(err)
		}
		db, err := Open("/db", Options{FS: fs, CheckpointInterval: -1, Logf: t.Logf})
		if err == nil {
			db.Close()
		}
		if !errors.Is(err, ErrCorruptCheckpoint) {
			t.Errorf("%s: Open: %v, want ErrCorruptCheckpoint", name, err)
		}
	}
}

// TestOpenRefusesInvalidConfigInLog: the same for a logged create record.
func TestOpenRefusesInvalidConfigInLog(t *testing.T) {
	fs := vfs.NewMemFS()
	l, _, err := wal.Open(wal.Options{FS: fs, Dir: "/db/wal"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(encodeCreate(createRec{uid: 1, name: "bad", cfg: Config{}})); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := Open("/db", Options{FS: fs, CheckpointInterval: -1, Logf: t.Logf})
	if err == nil {
		db.Close()
	}
	if !errors.Is(err, errBadRecord) {
		t.Fatalf("Open: %v, want errBadRecord", err)
	}
}
