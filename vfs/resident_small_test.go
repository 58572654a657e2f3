package vfs

import "testing"

// TestAllocResidentSmall (issue 26): memory smaller than a huge page is
// not rounded up to one. A huge page commits 2 MiB at its first write, so
// every small collection held 2 MiB of rows (and 2 more for its index
// after a restart): 4,096 collections of 80 MB of vectors took 10.5 GB.
// Below a huge page the size is exact.
func TestAllocResidentSmall(t *testing.T) {
	for _, size := range []int64{1, 4096, 100_000, HugePage - 1} {
		b, free, err := AllocResident(size)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(b)) != size || int64(cap(b)) != size {
			t.Fatalf("AllocResident(%d): len %d cap %d, want exactly %d", size, len(b), cap(b), size)
		}
		for i := range b {
			if b[i] != 0 {
				t.Fatalf("AllocResident(%d): byte %d = %d", size, i, b[i])
			}
			b[i] = byte(i)
		}
		if err := free(); err != nil {
			t.Fatal(err)
		}
	}
	// From a huge page up, whole huge pages as before.
	b, free, err := AllocResident(HugePage)
	if err != nil {
		t.Fatal(err)
	}
	defer free()
	if len(b) != HugePage {
		t.Fatalf("AllocResident(HugePage): %d bytes", len(b))
	}
}
