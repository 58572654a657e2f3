package filter

import (
	"bytes"
	"encoding/binary"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeBvecs writes n random dim-dimensional uint8 vectors clustered
// around a few centres.
func writeBvecs(t *testing.T, path string, n, dim int, rng *rand.Rand) {
	t.Helper()
	centres := make([][]byte, 16)
	for i := range centres {
		centres[i] = make([]byte, dim)
		rng.Read(centres[i])
	}
	var buf bytes.Buffer
	for range n {
		c := centres[rng.Intn(len(centres))]
		binary.Write(&buf, binary.LittleEndian, int32(dim))
		for j := range dim {
			buf.WriteByte(c[j]/2 + byte(rng.Intn(64)))
		}
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTenantShares: the shares span 5% to 0.01% and add up to 1.
func TestTenantShares(t *testing.T) {
	s := tenantShares(1000)
	var sum float64
	for _, x := range s {
		sum += x
	}
	if s[0] < 0.049 || s[0] > 0.051 || s[999] < 0.0001 || s[999] > 0.000105 || sum < 0.9999 || sum > 1.0001 {
		t.Fatalf("shares %.5f .. %.6f, sum %.5f", s[0], s[999], sum)
	}
}

// TestMainSmall runs both modes end to end on a small generated set, the
// second reusing the first's folder, and checks the report's shape and that
// filtered recall is reported as perfect where the exact path serves.
func TestMainSmall(t *testing.T) {
	data := t.TempDir()
	rng := rand.New(rand.NewSource(1))
	writeBvecs(t, filepath.Join(data, "base.bvecs"), 12000, 16, rng)
	writeBvecs(t, filepath.Join(data, "query.bvecs"), 50, 16, rng)
	dir := filepath.Join(t.TempDir(), "db")
	var out bytes.Buffer
	args := []string{"--data", data, "--nq", "5", "--tenants", "50", "--dir", dir}
	if err := Main(append(args, "--crossover"), &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "exact_us") || !strings.Contains(out.String(), "20.00%") {
		t.Fatalf("crossover report:\n%s", out.String())
	}
	out.Reset()
	if err := Main(args, &out); err != nil {
		t.Fatal(err)
	}
	rep := out.String()
	for _, want := range []string{"reusing the 12000 memories", "bitmaps:", "post K1=10", "K1 10000: 10000-10000 candidates", "DELTA 0 (L2: nothing passes): 0-0 candidates"} {
		if !strings.Contains(rep, want) {
			t.Fatalf("report lacks %q:\n%s", want, rep)
		}
	}
	t.Log(rep)
}

// TestAttrsSmall runs the attribute mode and the protocol run end to end on
// a small generated set, then again reusing the folder (which checks the
// stored attributes against the assignment), and checks the report's shape
// and that every tenant band's FILTER recall is reported.
func TestAttrsSmall(t *testing.T) {
	data := t.TempDir()
	rng := rand.New(rand.NewSource(2))
	writeBvecs(t, filepath.Join(data, "base.bvecs"), 12000, 16, rng)
	writeBvecs(t, filepath.Join(data, "query.bvecs"), 50, 16, rng)
	dir := filepath.Join(t.TempDir(), "db")
	args := []string{"--data", data, "--nq", "5", "--nq-unindexed", "3", "--tenants", "50", "--dir", dir, "--attrs", "--server", "--clients", "1,2"}
	for i, want := range []string{"added 12000 memories with attributes", "reusing the 12000 memories"} {
		var out bytes.Buffer
		if err := Main(args, &out); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		rep := out.String()
		for _, w := range []string{want, "attributes: 12000 memories carry them", "attribute index (INDEXED [tenant kind])",
			"no indexed fields", "indexed tenant and kind again", "protocol: MEM.RETRIEVE sift_attrs", "unfiltered       2 |"} {
			if !strings.Contains(rep, w) {
				t.Fatalf("run %d: report lacks %q:\n%s", i, w, rep)
			}
		}
		t.Log(rep)
	}
}

// TestCrossoverRefusesAttrs: the crossover is a bitmap-mode measurement.
func TestCrossoverRefusesAttrs(t *testing.T) {
	var out bytes.Buffer
	if err := Main([]string{"--attrs", "--crossover"}, &out); err == nil || !strings.Contains(err.Error(), "--crossover") {
		t.Fatalf("got %v", err)
	}
}
