//go:build linux

package serverann

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestPinProcess: every thread is bound to the CPUs asked for and the
// mask found is restored; bad lists are refused.
func TestPinProcess(t *testing.T) {
	var set unix.CPUSet
	if err := parseCPUList("0-2,5", &set); err != nil || set.Count() != 4 || !set.IsSet(5) || set.IsSet(3) {
		t.Fatalf("0-2,5: %v %v", set, err)
	}
	for _, bad := range []string{"", "a", "2-1", "-1", "1,,2", "5000"} {
		if err := parseCPUList(bad, &set); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	var old unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		t.Fatal(err)
	}
	restore, err := pinProcess("0")
	if err != nil {
		t.Fatal(err)
	}
	var now unix.CPUSet
	if err := unix.SchedGetaffinity(0, &now); err != nil || now.Count() != 1 || !now.IsSet(0) {
		t.Fatalf("pinned mask %v, %v", now, err)
	}
	if err := restore(); err != nil {
		t.Fatal(err)
	}
	if err := unix.SchedGetaffinity(0, &now); err != nil || now != old {
		t.Fatalf("restored mask %v, want %v (%v)", now, old, err)
	}
	if _, err := pinProcess("x"); err == nil {
		t.Fatal("bad list accepted")
	}
}
