package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/memrl/memrl/vfs"
)

// TestAutoIDsAfterMaxID (issue 14): ID 2^63-1 once made next_id wrap to
// -2^63 in MEM.INFO and every later add without ID fail, even after that id
// was deleted. Now an add without ID takes one above every id used while
// one is left, else one above the highest live id; only when that too is
// past MaxID does it fail (clearly), and an explicit ID still works. The
// same holds after replaying the log, and after a checkpoint.
func TestAutoIDsAfterMaxID(t *testing.T) {
	for _, ckpt := range []bool{false, true} {
		fs := vfs.NewMemFS()
		coll := func(db *DB) *Collection {
			c, err := db.Collection("ids")
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		autoAdd := func(c *Collection) (uint64, error) {
			return c.Add(AddRequest{Vector: []float32{1, 0}})
		}
		nextID := func(c *Collection) uint64 {
			in, err := c.Info()
			if err != nil {
				t.Fatal(err)
			}
			return in.NextID
		}
		// reopen checkpoints first when ckpt is set, then crashes (losing
		// nothing acknowledged: the policy is SyncAlways) and recovers: from
		// the checkpoint, or from the log alone.
		reopen := func(db *DB) (*DB, *Collection) {
			if ckpt {
				if err := db.Checkpoint(); err != nil {
					t.Fatal(err)
				}
			}
			fs, db = crashOpen(t, fs, 1)
			return db, coll(db)
		}

		db := openMem(t, fs)
		c := mustColl(t, db, "ids", NewConfig(2))
		add(t, c, 3, 0, 1, 0)
		add(t, c, MaxID, 0, 0, 1)
		for round := 0; round < 2; round++ {
			if _, err := autoAdd(c); !errors.Is(err, ErrBadParam) || !strings.Contains(err.Error(), "no memory ids left") {
				t.Fatalf("ckpt %v round %d: add without ID after MaxID: %v", ckpt, round, err)
			}
			if n := nextID(c); n != 0 {
				t.Fatalf("ckpt %v round %d: INFO next_id %d with no id left, want 0", ckpt, round, n)
			}
			add(t, c, uint64(4+round), 0, 1, 1) // an explicit ID still works
			db, c = reopen(db)
		}
		if n, err := c.Delete([]uint64{MaxID}); n != 1 || err != nil {
			t.Fatalf("delete MaxID: %d %v", n, err)
		}
		if n := nextID(c); n != 6 {
			t.Fatalf("ckpt %v: next_id %d after deleting MaxID, want 6", ckpt, n)
		}
		if id, err := autoAdd(c); id != 6 || err != nil {
			t.Fatalf("ckpt %v: add without ID after deleting MaxID = %d, %v; want 6", ckpt, id, err)
		}
		db, c = reopen(db)
		if id, err := autoAdd(c); id != 7 || err != nil {
			t.Fatalf("ckpt %v: add without ID after reopen = %d, %v; want 7", ckpt, id, err)
		}
		// Deleting the highest id frees it again; deleting a lower one
		// does not move the next id.
		c.Delete([]uint64{7, 3})
		if id, err := autoAdd(c); id != 7 || err != nil {
			t.Fatalf("ckpt %v: add after deleting 7 = %d, %v; want 7", ckpt, id, err)
		}
		db.Close()
	}
}
