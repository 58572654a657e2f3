package engine

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"testing"

	"github.com/memrl/memrl/wal"
)

// heapAloneEnv set to 1 makes TestSmallCollectionHeap measure in this
// process; unset, it runs itself alone in a child process.
const heapAloneEnv = "MEMRL_TEST_HEAP_ALONE"

// heapInuse returns the heap in use after a full collection.
func heapInuse() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}

// TestSmallCollectionHeap (issue 26 item 4): a small collection's heap is
// proportional to its data, not a fixed cost of tens of KiB (the qtable's
// 256 stripes alone took 68 KiB per collection, however small). 256
// collections of 40 memories of 16-d hold about 40 × (64 bytes of vector
// + ~300 of records) = ~15 KiB of data each; the bound leaves room for the
// maps and the runtime's rounding, and fails at the old fixed cost
// (measured: 99.6 KB a collection with 256 stripes, 26.4 KB now; 9 KB
// with no memories, of which the history's stripes are 4 KiB).
func TestSmallCollectionHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 256 collections")
	}
	if os.Getenv(heapAloneEnv) != "1" {
		// Measured alone, in a child process of this test binary: in
		// the package's run the heap also holds what earlier tests left
		// (19 MB once), and any of it freed between two readings counts
		// against the collections (41 KB a collection measured so, on a
		// quiet machine, against 25 KB alone).
		cmd := exec.Command(os.Args[0], "-test.run=^TestSmallCollectionHeap$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), heapAloneEnv+"=1")
		out, err := cmd.CombinedOutput()
		t.Logf("alone:\n%s", out)
		if err != nil {
			t.Fatalf("TestSmallCollectionHeap alone: %v", err)
		}
		return
	}
	const ncoll, nmem, dim = 256, 40, 16
	db, _ := openTemp(t, Options{Sync: wal.SyncNone, CheckpointInterval: -1})
	// One collection first, so that the database's own lazily built
	// structures are not counted against the rest.
	mustColl(t, db, "warm", Config{Dim: dim, Metric: L2})
	before := heapInuse()
	colls := make([]*Collection, ncoll)
	for i := range colls {
		colls[i] = mustColl(t, db, "c"+strconv.Itoa(i), Config{Dim: dim, Metric: L2})
		v := make([]float32, dim)
		for j := 0; j < nmem; j++ {
			v[0], v[1] = float32(i), float32(j)
			add(t, colls[i], uint64(j+1), 0, v...)
		}
	}
	filled := heapInuse()
	runtime.KeepAlive(colls)
	// What the collections hold is what dropping them frees. The
	// difference from before the fill also counts buffers the database
	// shares among all collections and sizes by load (the log keeps its
	// spare batch buffers at the largest batch's size, and batches grow
	// when the flusher falls behind, as on a loaded machine: 41 KB a
	// collection was measured that way once), which a drop leaves.
	for i := range colls {
		if err := db.Drop("c" + strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	colls = nil
	per := (filled - heapInuse()) / ncoll
	t.Logf("heap per collection of %d memories: %d bytes (heap %d before the fill, %d after)", nmem, per, before, filled)
	const bound = 40 << 10
	if per > bound {
		t.Fatalf("a collection of %d memories holds %d bytes of heap, want <= %d", nmem, per, bound)
	}
}
