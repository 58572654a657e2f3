package engine

import (
	"testing"

	"github.com/memrl/memrl/vfs"
)

// TestExactWritesDedupScansExactly: with Options.ExactWrites a
// deduplicated add searches exactly (replicas must agree whatever their
// indexes); without it, phase 1 chooses.
func TestExactWritesDedupScansExactly(t *testing.T) {
	for _, exact := range []bool{false, true} {
		db, err := Open("db", Options{FS: vfs.NewMemFS(), ExactWrites: exact, CheckpointInterval: -1, Logf: t.Logf})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Create("k", Config{Dim: 2}); err != nil {
			t.Fatal(err)
		}
		c, err := db.Collection("k")
		if err != nil {
			t.Fatal(err)
		}
		want := PathAuto
		if exact {
			want = PathExact
		}
		if got := c.dedupSearchOptions(&AddRequest{Dedup: 0.9, HasDedup: true}).Path; got != want {
			t.Fatalf("ExactWrites %v: dedup path %v, want %v", exact, got, want)
		}
		// And a deduplicated add still works on that path.
		id, err := c.Add(AddRequest{Vector: []float32{1, 0}})
		if err != nil {
			t.Fatal(err)
		}
		if dup, err := c.Add(AddRequest{Vector: []float32{1, 0.01}, Dedup: 0.99, HasDedup: true}); err != nil || dup != id {
			t.Fatalf("dedup add = %d, %v; want %d", dup, err, id)
		}
		db.Close()
	}
}
