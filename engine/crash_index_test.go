package engine

import (
	"bytes"
	"fmt"
	"math/rand"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/memrl/memrl/ivfpq"
	"github.com/memrl/memrl/vfs"
)

// Crash tests of the IVF-PQ index file, which is saved through the
// database's vfs.FS like every other file: a database whose durable index
// was saved at 600 rows takes 100 more adds and a checkpoint, then Close
// saves the grown index (an atomic replace of ivfpq.idx). The power is cut
// at every mutating file operation of that Close, the disk is crashed in
// each CrashMode, and the recovered database must hold the old index file
// or the new one, byte for byte (never a torn one), open it without
// discarding it, and serve every acknowledged memory.

const (
	crashIndexBase  = 600 // rows of the saved index before the workload
	crashIndexAdded = 100 // rows the workload adds (well under the quarter that saves in the background)
)

// crashIndexVec is row id's vector: clustered, so k-means has structure.
func crashIndexVec(id uint64) []float32 {
	rng := rand.New(rand.NewSource(int64(id)))
	c := float32(id % 7 * 10)
	v := make([]float32, 8)
	for i := range v {
		v[i] = c + float32(rng.NormFloat64())
	}
	return v
}

// logSink collects Logf lines, so a test can tell whether recovery
// discarded the index.
type logSink struct {
	mu    sync.Mutex
	lines []string
}

func (l *logSink) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logSink) grep(s string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}

// crashIndexBaseFS returns a durable MemFS holding a database whose
// collection "ix" has crashIndexBase rows and a saved index of all of them,
// and the path of that index file.
func crashIndexBaseFS(t *testing.T) (*vfs.MemFS, string) {
	t.Helper()
	fs := vfs.NewMemFS()
	db, err := Open("/db", crashOpts(fs))
	if err != nil {
		t.Fatal(err)
	}
	c := mustColl(t, db, "ix", Config{Dim: 8, Metric: L2, Index: IndexConfig{NList: 4, TrainThreshold: 400}})
	for id := uint64(1); id <= crashIndexBase; id++ {
		if _, err := c.Add(AddRequest{Vector: crashIndexVec(id), ID: id, HasID: true}); err != nil {
			t.Fatal(err)
		}
	}
	waitIndexed(t, c)
	path := filepath.Join(c.indexDir(), ivfpq.FileName)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	base := fs.Crash(vfs.DropUnsynced, nil) // Close made everything durable
	if rows := indexFileRows(t, base, path); rows != crashIndexBase {
		t.Fatalf("base index has %d rows, want %d", rows, crashIndexBase)
	}
	return base, path
}

// indexFileRows opens and fully verifies the index file at path, failing
// the test if it is damaged, and returns its rows.
func indexFileRows(t *testing.T, fs vfs.FS, path string) uint32 {
	t.Helper()
	ix, err := ivfpq.Open(fs, filepath.Dir(path))
	if err != nil {
		t.Fatalf("index file: %v", err)
	}
	defer ix.Close()
	if err := ix.Verify(); err != nil {
		t.Fatalf("index file: %v", err)
	}
	return ix.Rows()
}

// crashIndexWorkload opens the database on fs, adds the workload's rows,
// checkpoints and closes (which saves the index). It returns the ids whose
// add was acknowledged, and the mutating-operation count after the
// checkpoint: the Close, with the index save, comes after it. It stops at
// the first failure (the power went out).
func crashIndexWorkload(fs *vfs.MemFS) (acked []uint64, beforeClose int64) {
	db, err := Open("/db", crashOpts(fs))
	if err != nil {
		return nil, -1
	}
	c, err := db.Collection("ix")
	if err != nil {
		db.Close()
		return nil, -1
	}
	for id := uint64(crashIndexBase + 1); id <= crashIndexBase+crashIndexAdded; id++ {
		if _, err := c.Add(AddRequest{Vector: crashIndexVec(id), ID: id, HasID: true}); err != nil {
			db.Close()
			return acked, -1
		}
		acked = append(acked, id)
	}
	if err := db.Checkpoint(); err != nil {
		db.Close()
		return acked, -1
	}
	beforeClose = fs.MutatingOps()
	db.Close()
	return acked, beforeClose
}

func TestCrashDuringIndexSave(t *testing.T) {
	base, path := crashIndexBaseFS(t)
	oldFile, err := vfs.ReadFile(base, path)
	if err != nil {
		t.Fatal(err)
	}

	// A clean run: how many operations Close makes, and the new file.
	clean := base.Crash(vfs.DropUnsynced, nil)
	clean.PowerOffAt(0)
	acked, from := crashIndexWorkload(clean)
	if len(acked) != crashIndexAdded || from < 0 {
		t.Fatalf("clean run: %d adds acknowledged, checkpoint at op %d", len(acked), from)
	}
	to := clean.MutatingOps()
	if rows := indexFileRows(t, clean, path); rows != crashIndexBase+crashIndexAdded {
		t.Fatalf("Close saved an index of %d rows, want %d", rows, crashIndexBase+crashIndexAdded)
	}
	newFile, _ := vfs.ReadFile(clean, path)
	if bytes.Equal(oldFile, newFile) {
		t.Fatal("Close did not replace the index file")
	}

	// k = to+1 is past the last operation: the power never goes out.
	sawOld, sawNew := false, false
	for k := from + 1; k <= to+1; k++ {
		for _, mode := range []vfs.CrashMode{vfs.DropUnsynced, vfs.KeepRandomPrefix, vfs.TearLastSector} {
			fs := base.Crash(vfs.DropUnsynced, nil)
			fs.PowerOffAt(k)
			acked, _ := crashIndexWorkload(fs)
			crashed := fs.Crash(mode, rand.New(rand.NewSource(k<<2^int64(mode))))
			what := fmt.Sprintf("power off at op %d of (%d, %d], %v", k, from, to, mode)

			got, err := vfs.ReadFile(crashed, path)
			switch {
			case err != nil:
				t.Fatalf("%s: the index file is gone: %v", what, err)
			case bytes.Equal(got, oldFile):
				sawOld = true
			case bytes.Equal(got, newFile):
				sawNew = true
			default:
				t.Fatalf("%s: the index file (%d bytes) is neither the old (%d) nor the new (%d) one", what, len(got), len(oldFile), len(newFile))
			}

			logs := &logSink{}
			opts := crashOpts(crashed)
			opts.Logf = logs.logf
			db, err := Open("/db", opts)
			if err != nil {
				t.Fatalf("%s: recovery: %v", what, err)
			}
			if bad := logs.grep("index"); len(bad) > 0 {
				db.Close()
				t.Fatalf("%s: recovery did not use the saved index: %q", what, bad)
			}
			c, err := db.Collection("ix")
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			info, _ := c.Info()
			if !strings.HasPrefix(info.Index, "ivfpq") {
				t.Fatalf("%s: index %q after recovery, want the saved ivfpq one", what, info.Index)
			}
			for _, id := range append(allIDs(crashIndexBase), acked...) {
				m, err := c.Get(id)
				if err != nil || !equalVec(m.Vector, crashIndexVec(id)) {
					t.Fatalf("%s: memory %d: %v", what, id, err)
				}
			}
			res, err := c.Retrieve(crashIndexVec(crashIndexBase+1), RetrieveOptions{SearchOptions: SearchOptions{K1: 20}, K2: 5})
			if err != nil || len(res) == 0 {
				t.Fatalf("%s: retrieve: %d results, %v", what, len(res), err)
			}
			if err := db.Close(); err != nil {
				t.Fatalf("%s: close after recovery: %v", what, err)
			}
		}
	}
	if !sawOld || !sawNew {
		t.Fatalf("crash points saw the old file: %v, the new one: %v; want both", sawOld, sawNew)
	}
}

func allIDs(n int) []uint64 {
	ids := make([]uint64, n)
	for i := range ids {
		ids[i] = uint64(i + 1)
	}
	return ids
}

func equalVec(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
