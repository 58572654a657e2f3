package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/memrl/memrl/vfs"
)

// TestCollectionNames: names with Redis hash tags are accepted (and
// survive a restart); every other character outside the documented set,
// an empty name and one over 128 bytes are refused and create nothing.
func TestCollectionNames(t *testing.T) {
	fs := vfs.NewMemFS()
	db := openMem(t, fs)
	good := []string{"{agent7}.plans", "{agent7}.notes", "a{b", "}x{", "{}", "A-z_0.9:{t}", strings.Repeat("{", 128)}
	for _, n := range good {
		if err := db.Create(n, NewConfig(2)); err != nil {
			t.Fatalf("Create(%q): %v", n, err)
		}
	}
	bad := []string{"", "a b", "a*b", "a/b", "a\tb", "é", "[x]", "a\x00", strings.Repeat("a", 129)}
	for _, n := range bad {
		if err := db.Create(n, NewConfig(2)); !errors.Is(err, ErrBadName) {
			t.Fatalf("Create(%q) = %v, want ErrBadName", n, err)
		}
	}
	if got := len(db.List()); got != len(good) {
		t.Fatalf("%d collections, want %d: %v", got, len(good), db.List())
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openMem(t, fs)
	defer db.Close()
	for _, n := range good {
		if _, err := db.Collection(n); err != nil {
			t.Fatalf("after reopen, %q: %v", n, err)
		}
	}
}
