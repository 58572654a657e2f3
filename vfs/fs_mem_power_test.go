package vfs

import (
	"errors"
	"math/rand"
	"testing"
)

func TestMemFSPowerOffAt(t *testing.T) {
	m := NewMemFS()
	if err := m.MkdirAll("/d", 0o755); err != nil { // op 1
		t.Fatal(err)
	}
	m.PowerOffAt(4)
	f, err := m.Create("/d/f") // op 1
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("durable")); err != nil { // op 2
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil { // op 3
		t.Fatal(err)
	}
	if _, err := f.Write([]byte(" lost")); !errors.Is(err, ErrPoweredOff) { // op 4
		t.Fatalf("write after power-off: %v, want ErrPoweredOff", err)
	}
	if err := m.SyncDir("/d"); !errors.Is(err, ErrPoweredOff) { // op 5
		t.Fatalf("SyncDir after power-off: %v", err)
	}
	if err := m.Rename("/d/f", "/d/g"); !errors.Is(err, ErrPoweredOff) {
		t.Fatalf("Rename after power-off: %v", err)
	}
	if _, err := m.OpenReadWrite("/d/new"); !errors.Is(err, ErrPoweredOff) {
		t.Fatalf("creating open after power-off: %v", err)
	}
	// Opening an existing file is not a mutation.
	if _, err := m.OpenReadWrite("/d/f"); err != nil {
		t.Fatal(err)
	}
	if !m.PoweredOff() || m.MutatingOps() != 7 {
		t.Fatalf("PoweredOff %v, ops %d", m.PoweredOff(), m.MutatingOps())
	}
	// Reads still work and see what was written before the power-off.
	b, err := ReadFile(m, "/d/f")
	if err != nil || string(b) != "durable" {
		t.Fatalf("read %q %v", b, err)
	}
	// The file's name was never made durable: a crash loses it whole.
	c := m.Crash(KeepRandomPrefix, rand.New(rand.NewSource(1)))
	if _, err := c.Stat("/d/f"); err == nil {
		// a random prefix of the directory's ops may keep the create
		b, _ := ReadFile(c, "/d/f")
		if string(b) != "durable" {
			t.Fatalf("crash kept %q", b)
		}
	}
	m.PowerOffAt(0)
	if _, err := f.Write([]byte("!")); err != nil {
		t.Fatalf("write after disarm: %v", err)
	}
}
