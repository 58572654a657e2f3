package server

import (
	"errors"
	"strings"
	"testing"
)

// Small bulks are appended to the arena (readBulk) with no reservation
// first; account runs only at the next fill, after append has already
// doubled the arena. With a 1 MiB budget the Reader allocates a 2 MiB+
// arena before it refuses, so N clients can overshoot MaxMemory by about
// N x their arena (the "40 x 60 MB uploads" scenario with 8 KiB bulks).
func TestArenaAppendOvershootsBudget(t *testing.T) {
	const limit = 1 << 20
	var b strings.Builder
	n := 4000
	b.WriteString("*" + itoa(n) + "\r\n")
	for i := 0; i < n; i++ {
		b.WriteString("$1000\r\n" + strings.Repeat("x", 1000) + "\r\n")
	}
	bud := &Budget{limit: limit}
	r := NewReader(strings.NewReader(b.String()), Limits{})
	r.SetBudget(bud)
	_, err := r.ReadCommand()
	if !errors.Is(err, errClientMemory) {
		t.Fatalf("err = %v, want OOM", err)
	}
	if c := cap(r.arena); c > limit {
		t.Fatalf("arena of %d bytes allocated with a budget of %d (reserved %d)", c, limit, bud.Used())
	}
}
