package cluster

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSlotStatesFile: Set writes the table to its file, Load reads it
// back; a damaged, cut or unknown file is refused and the table kept.
func TestSlotStatesFile(t *testing.T) {
	dir := t.TempDir()
	s := NewSlotStates()
	if err := s.Load(dir); err != nil { // a fresh folder
		t.Fatal(err)
	}
	steps := []struct {
		slot  int
		mode  SlotMode
		shard int
		node  int
	}{{5, SlotMigrating, 2, -1}, {9, SlotImporting, 1, -1}, {5, SlotStable, -1, 2}, {16383, SlotMigrating, 3, -1}}
	for _, st := range steps {
		if err := s.Set(st.slot, st.mode, st.shard, st.node); err != nil {
			t.Fatal(err)
		}
	}
	const want = "5:node:2 9:importing:1 16383:migrating:3"
	if got := s.String(); got != want {
		t.Fatalf("table %q, want %q", got, want)
	}
	if m := s.Migration(9); m != (Migration{SlotImporting, 1}) {
		t.Fatalf("Migration(9) = %+v", m)
	}
	if m := s.Migration(5); m.Mode != SlotStable {
		t.Fatalf("Migration(5) after NODE = %+v", m)
	}
	if o, ok := s.Owner(5); !ok || o != 2 {
		t.Fatalf("Owner(5) = %d, %v", o, ok)
	}
	m := DefaultSlots(2)
	if ov := s.Overlay(m); ov[5] != 2 || m[5] != 0 || ov[6] != 0 {
		t.Fatalf("Overlay: %d %d %d", ov[5], m[5], ov[6])
	}

	r := NewSlotStates()
	if err := r.Load(dir); err != nil {
		t.Fatal(err)
	}
	if got := r.String(); got != want {
		t.Fatalf("loaded %q, want %q", got, want)
	}
	if err := r.Load(t.TempDir()); err != nil || r.String() != "" {
		t.Fatalf("no file: %v, %q", err, r.String())
	}

	path := filepath.Join(dir, SlotStateFile)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bad := map[string][]byte{
		"flipped byte":  flip(good, strings.Index(string(good), "importing")),
		"cut short":     good[:len(good)-20],
		"no sum line":   []byte(SlotStateHeader + "\n1\tmigrating\t1\n"),
		"wrong version": frame("# memrl slot states v2", []byte("1\tnode\t1\n")),
		"unknown state": frame(SlotStateHeader, []byte("1\tmoving\t1\n")),
		"two owners":    frame(SlotStateHeader, []byte("1\tnode\t1\n1\tnode\t2\n")),
		"bad slot":      frame(SlotStateHeader, []byte("16384\tnode\t1\n")),
	}
	for what, data := range bad {
		r := NewSlotStates()
		r.Set(1, SlotMigrating, 1, -1)
		d := t.TempDir()
		if err := os.WriteFile(filepath.Join(d, SlotStateFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := r.Load(d); !errors.Is(err, ErrSlotState) {
			t.Errorf("%s: Load = %v, want ErrSlotState", what, err)
		}
		if r.String() != "1:migrating:1" {
			t.Errorf("%s: a refused file changed the table to %q", what, r.String())
		}
	}
}

func flip(b []byte, i int) []byte {
	out := append([]byte(nil), b...)
	out[i] ^= 0x20
	return out
}
