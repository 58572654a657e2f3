package ann

import "testing"

// TestHugeFloats: the base's allocation is n zeroed, writable floats (a
// ragged size past two huge pages), and none for n = 0.
func TestHugeFloats(t *testing.T) {
	if x := hugeFloats(0); len(x) != 0 {
		t.Fatalf("hugeFloats(0) has %d floats", len(x))
	}
	const n = 1<<20 + 3
	x := hugeFloats(n)
	if len(x) != n {
		t.Fatalf("len %d, want %d", len(x), n)
	}
	for i := range x {
		if x[i] != 0 {
			t.Fatalf("x[%d] = %v, want 0", i, x[i])
		}
		x[i] = float32(i)
	}
	if x[n-1] != n-1 || x[0] != 0 {
		t.Fatal("writes do not read back")
	}
}
