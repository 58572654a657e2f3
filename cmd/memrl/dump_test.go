package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/wal"
)

// TestDump runs `memrl dump` on the files of a database made here: the
// log, a checkpoint (-v), the index and the vectors; then on a damaged
// checkpoint and log (exit 1, the damage's offset on stderr); and the
// command line's usage errors (exit 2).
func TestDump(t *testing.T) {
	bin := buildMemrl(t)
	dir := t.TempDir()
	db, err := engine.Open(dir, engine.Options{Sync: wal.SyncNone, CheckpointInterval: -1, CheckpointBytes: -1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	cfg := engine.Config{Dim: 4, Metric: engine.L2, Alpha: 0.5, Index: engine.IndexConfig{Kind: engine.IndexIVFPQ, NList: 2, PQBits: 4, TrainThreshold: 40}}
	if err := db.Create("d", cfg); err != nil {
		t.Fatal(err)
	}
	c, _ := db.Collection("d")
	for i := range 300 {
		if _, err := c.Add(engine.AddRequest{Vector: []float32{float32(i % 7), float32(i % 5), float32(i), 1}, Key: "k" + strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if in, _ := c.Info(); strings.HasPrefix(in.Index, "ivfpq") && !strings.Contains(in.Index, "(") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("index not built in 2 minutes")
		}
	}
	c.Reward(1, []uint64{1}, nil)
	if err := db.Close(); err != nil { // a full checkpoint, and the index saved
		t.Fatal(err)
	}
	uidDir := filepath.Join(dir, "collections", "0000000000000001")
	run := func(args ...string) (int, string, string) {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"dump"}, args...)...)
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), out.String(), errOut.String()
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, out.String(), errOut.String()
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"wal", dir}, []string{"segment ", " records\n"}},
		{[]string{"checkpoint", "-v", filepath.Join(dir, "CHECKPOINT")}, []string{"kind full", `name="d"`, "section history (tag 1)", "reward=1 q=0.5 visits=1"}},
		{[]string{"index", filepath.Join(uidDir, "ivfpq")}, []string{"nlist 2", "pqbits 4", "lists: 2, vectors per list"}},
		{[]string{"vectors", filepath.Join(uidDir, "vectors.sum")}, []string{"dim 4", "row checksums"}},
	} {
		status, out, errOut := run(tc.args...)
		for _, w := range tc.want {
			if status != 0 || !strings.Contains(out, w) {
				t.Fatalf("dump %v: exit %d, stdout lacks %q:\n%s\nstderr %s", tc.args, status, w, trim(out), errOut)
			}
		}
	}
	// Damage: exit 1, what decodes printed, the offset named.
	ck := filepath.Join(dir, "CHECKPOINT")
	b, _ := os.ReadFile(ck)
	os.WriteFile(ck, b[:len(b)-40], 0o644)
	if status, out, errOut := run("checkpoint", ck); status != 1 || !strings.Contains(out, "CHECKSUM MISMATCH") || !strings.Contains(errOut, "stopped at byte") {
		t.Fatalf("cut checkpoint: exit %d\n%s\n%s", status, trim(out), errOut)
	}
	segs, _ := filepath.Glob(filepath.Join(dir, "wal", "*.wal"))
	if len(segs) == 0 {
		t.Fatal("no log segment")
	}
	last := segs[len(segs)-1]
	b, _ = os.ReadFile(last)
	os.WriteFile(last, append(b, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25), 0o644)
	if status, _, errOut := run("wal", last); status != 1 || !strings.Contains(errOut, "at offset "+strconv.Itoa(len(b))) {
		t.Fatalf("damaged log: exit %d, stderr %s", status, errOut)
	}
	for _, args := range [][]string{{}, {"nope", dir}, {"wal"}, {"wal", "a", "b"}, {"index", "-v", "x"}} {
		if status, _, _ := run(args...); status != 2 {
			t.Fatalf("dump %v: exit %d, want 2", args, status)
		}
	}
	if status, out, _ := run("--help"); status != 0 || !strings.Contains(out, "memrl dump checkpoint") {
		t.Fatalf("dump --help: exit %d %s", status, out)
	}
}
